"""``pyticdc vectors check PATH...``: run golden vector cases, one line per failure."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pyticdc.cli.common import USAGE, report
from pyticdc.errors import ConfigError
from pyticdc.vectors import check_file, vector_files

__all__ = ["add_parser"]


def add_parser(subparsers: Any) -> None:
    """Register ``vectors``."""
    parser = subparsers.add_parser("vectors", help="golden test vectors")
    sub = parser.add_subparsers(dest="vectors_command", metavar="ACTION")
    check = sub.add_parser("check", help="run every case of vector files; exit 1 if any fails")
    check.add_argument("paths", nargs="+", type=Path, help="vector JSON files or directories")
    check.add_argument("-v", "--verbose", action="store_true", help="also list passing cases (default: only failures)")
    check.set_defaults(run=run_check)


def run_check(args: argparse.Namespace) -> int:
    """Print failing cases and the ``N passed, M failed`` line."""
    missing = [p for p in args.paths if not p.exists()]
    if missing:
        return report(args, f"no such file: {', '.join(map(str, missing))}", USAGE)
    try:
        files = vector_files(args.paths)  # every input is checked to be a vector file before any case runs
    except ConfigError as exc:
        return report(args, exc, USAGE)
    results = [result for path, meta in files for result in check_file(path, meta)]
    passed = sum(r.passed for r in results)
    for r in results:
        if not r.passed:
            print(f"FAIL {r.file}::{r.name}: {r.reason}")
        elif args.verbose:
            print(f"ok   {r.file}::{r.name}")
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1
