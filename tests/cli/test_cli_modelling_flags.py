"""``replicate`` and ``selftest`` declare the "replica tables" flags once (pyticdc.cli.common) and read them alike."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pyticdc.cli import build_parser
from pyticdc.cli.common import add_modelling_flags, modelling_from_args
from pyticdc.replica.modelling import Modelling

FLAGS = ["--metadata-columns", "_op,_ingested_at", "--soft-delete", "--table-key", "sim.t_uk=a,b",
         "--history", "sim.*", "--history-columns", "sim.t_int=c_int", "--history-table-name", "{table}_h",
         "--columns", "sim.t_np=id,n", "--exclude-columns", "sim.*=c_text", "--rename-column", "sim.t_np.n=amount",
         "--table-name", "sim.*=bronze.sim_{table}", "--schema-evolution", "rescue"]


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_replicate_and_selftest_read_the_same_flags_into_the_same_modelling(tmp_path: Path) -> None:
    replicate = modelling_from_args(_parse("replicate", "--to", str(tmp_path / "wh"), *FLAGS))
    selftest = modelling_from_args(_parse("selftest", *FLAGS))
    assert replicate == selftest != Modelling()
    assert selftest.on_truncate == "apply" and selftest.schema_evolution == "rescue" and selftest.soft_delete
    ignoring = modelling_from_args(_parse("replicate", "--to", str(tmp_path / "wh"), "--on-truncate", "ignore"))
    assert ignoring.on_truncate == "ignore"


def test_defaults_are_the_default_modelling(tmp_path: Path) -> None:
    assert modelling_from_args(_parse("replicate", "--to", str(tmp_path / "wh"))) == Modelling()
    assert modelling_from_args(_parse("selftest")) == Modelling()


@pytest.mark.parametrize("argv", [["--on-truncate", "ignore"], ["--schema-evolution", "fail"]])
def test_selftest_offers_only_what_its_truth_models(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        _parse("selftest", *argv)


def test_help_for_an_unknown_flag_is_refused() -> None:
    with pytest.raises(ValueError, match="--nope"):
        add_modelling_flags(argparse.ArgumentParser(), helps={"--nope": "x"})
