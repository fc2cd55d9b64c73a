"""``replicate`` and ``selftest``: column/table mapping and schema evolution flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.cli import main

pytest.importorskip("deltalake")


def _status(argv: list[str]) -> int:
    # argparse's own refusals (a bad choice) exit through SystemExit, pyticdc's return the code.
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(("extra", "words"), [
    (["--columns", "s.t"], "expected SCHEMA.TABLE=COLUMN"),
    (["--exclude-columns", "s.[=a"], "--exclude-columns s.["),
    (["--rename-column", "t=x"], "SCHEMA.TABLE.COLUMN=NEW_NAME"),
    (["--table-name", "s.*=flat_{table}"], "is not SCHEMA.TABLE"),
    (["--table-name", "s.*=b.{nope}"], "unknown placeholder {nope}"),
    (["--schema-evolution", "sometimes"], "invalid choice"),
])
def test_replicate_refuses_bad_mapping_flags_with_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str) -> None:
    capture = tmp_path / "none.jsonl"
    capture.write_text("")
    assert _status(["replicate", "--from", str(capture), "-p", "craft", "--to", str(tmp_path / "wh"), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "wh").exists()


def test_selftest_checks_a_mapped_replica_against_the_transformed_truth(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["selftest", "-p", "canal-json", "--transactions", "25", "--faults", "all",
                   "--exclude-columns", "sim.*=c_text", "--rename-column", "sim.*.n=amount",
                   "--table-name", "sim.*=bronze.sim_{table}", "--schema-evolution", "rescue"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "ok " in out and "exclude sim.*=c_text" in out and "schema evolution rescue" in out


def test_selftest_refuses_a_mode_its_truth_cannot_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert _status(["selftest", "--schema-evolution", "fail"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice" in err[0]


def test_replicate_refuses_leaving_out_a_handle_column_of_a_table_the_warehouse_holds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pyticdc.consumer import ApplyUnit
    from pyticdc.model import Op, Row, RowChange
    from pyticdc.mysql import table_info_with_flags
    from pyticdc.replica import DeltaReplica
    from pyticdc.sim.workload import TEMPLATES

    template = TEMPLATES["t_int"]
    info = table_info_with_flags("s", "t", 1, 1, template.columns, template.indexes, template.pk_is_handle)
    handle = next(c.name for c in info.columns if c.is_handle_key)
    replica = DeltaReplica(tmp_path / "wh")
    replica.apply(ApplyUnit(kind="rows", consistent_ts=5, rows=(RowChange(
        op=Op.INSERT, schema="s", table="t", commit_ts=5, columns=Row({handle: 1}), table_info=info),)))
    replica.commit(b"")
    capture = tmp_path / "none.jsonl"
    capture.write_text("")
    before = sorted(p.name for p in (tmp_path / "wh").rglob("*"))
    assert _status(["replicate", "--from", str(capture), "-p", "craft", "--to", str(tmp_path / "wh"),
                    "--exclude-columns", f"s.t={handle}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"column(s) {handle} identify its rows" in err[0]
    assert sorted(p.name for p in (tmp_path / "wh").rglob("*")) == before
