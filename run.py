#!/usr/bin/env python3
"""Set-up-free entry point: ``python3 run.py demo`` or ``python3 run.py test``.

Creates (or reuses) ``.venv`` next to this file, installs pyticdc with everything it needs
when pyproject.toml changed since the last install, then runs the requested job.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".pyticdc-install-stamp"


def _fingerprint() -> str:
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_environment() -> None:
    """Create the virtual environment and install the project with all extras if needed."""
    if not PYTHON.exists():
        print(f"creating virtual environment in {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    if STAMP.exists() and STAMP.read_text() == _fingerprint():
        return
    print("installing pyticdc and its dependencies (first run only)", flush=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[all]"], check=True)
    # The developer tools (pytest, mypy, ruff) are a dependency group, not a user-facing extra.
    subprocess.run([str(PYTHON), "-m", "pip", "install", "--quiet", "--group", f"{ROOT / 'pyproject.toml'}:dev"],
                   check=True)
    STAMP.write_text(_fingerprint())


def main(argv: list[str]) -> int:
    """Run ``demo`` (the main job), ``test`` (the whole suite) or any ``pyticdc`` command."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    ensure_environment()
    command, rest = argv[0], argv[1:]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if command == "test":
        args = [str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", *rest]
    else:
        args = [str(BIN / "pyticdc"), command, *rest]
    return subprocess.run(args, cwd=ROOT, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
