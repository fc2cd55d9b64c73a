"""``pyticdc produce`` with producer options every protocol lists (issue 14, finding 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.cli import main
from pyticdc.codec import make_decoder
from pyticdc.io.capture import read_capture
from pyticdc.model import Event, Op, RowChange

START_MS = 1_750_000_000_000


def _events(path: Path, protocol: str, options: dict[str, object] | None = None) -> list[Event]:
    decoders: dict[tuple[str, int], object] = {}
    events: list[Event] = []
    for record in read_capture(path):
        decoder = decoders.setdefault((record.topic, record.partition), make_decoder(protocol, options or {}))
        events.extend(decoder.decode(record.value, record.key))  # type: ignore[attr-defined]
    return events


def _deletes(path: Path, protocol: str, options: dict[str, object]) -> list[RowChange]:
    return [e for e in _events(path, protocol, options) if isinstance(e, RowChange) and e.op is Op.DELETE]


@pytest.mark.parametrize(("protocol", "options"), [
    ("craft", {}), ("simple", {}), ("simple", {"encoding-format": "avro"}), ("open-protocol", {}),
])
def test_delete_only_handle_key_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], protocol: str, options: dict[str, object],
) -> None:
    given = [a for k, v in options.items() for a in ("-o", f"{k}={v}")]
    common = ["produce", "-p", protocol, *given, "--seed", "8", "--transactions", "120", "--start-ms", str(START_MS),
              "--no-progress", "--tables", "t_int,t_comp,t_np,t_uk"]
    full, keyed = tmp_path / "full.jsonl", tmp_path / "keyed.jsonl"
    assert main([*common, "-O", str(full)]) == 0
    assert main([*common, "-o", "delete-only-output-handle-key-columns=true", "-O", str(keyed)]) == 0
    full_deletes, key_deletes = _deletes(full, protocol, options), _deletes(keyed, protocol, options)
    assert full_deletes and len(full_deletes) == len(key_deletes)
    for whole, key_only in zip(full_deletes, key_deletes):
        assert whole.pre_columns is not None and key_only.pre_columns is not None and whole.table_info is not None
        handle = whole.table_info.handle_key_columns
        assert handle and (key_only.schema, key_only.table, key_only.commit_ts) == (
            whole.schema, whole.table, whole.commit_ts)
        # The DELETE carries exactly the handle-key columns of the full image, with their values.
        assert dict(key_only.pre_columns) == {name: whole.pre_columns[name] for name in handle}
    if protocol == "simple":
        assert all(d.handle_key_only for d in key_deletes) and not any(d.handle_key_only for d in full_deletes)
    capsys.readouterr()


def test_handle_less_tables_and_delete_only_handle_key_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "craft.jsonl"
    args = ["produce", "-p", "craft", "-o", "delete-only-output-handle-key-columns=true", "--seed", "8",
            "--no-progress", "-O", str(out)]
    # By default the table shape without a handle key is left out (TiCDC would not replicate it), and said so.
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "left out, no handle key: t_rowid" in err
    tables = {e.table for e in _events(out, "craft") if isinstance(e, RowChange)}
    assert tables and not any(t.startswith("t_rowid") for t in tables)
    # Asked for by name, it is a usage error, one line, and nothing is written.
    out.unlink()
    assert main([*args, "--tables", "t_int,t_rowid"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyticdc produce: error: ") and "t_rowid" in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("protocol", ["craft", "canal-json", "simple", "open-protocol"])
def test_selftest_with_delete_only_handle_key_columns(capsys: pytest.CaptureFixture[str], protocol: str) -> None:
    # Issue 14 follow-up: selftest leaves handle-less tables out (as produce does: TiCDC would not replicate them)
    # and a DELETE that carries only its handle key deletes the row it names.
    status = main(["selftest", "-p", protocol, "-o", "delete-only-output-handle-key-columns=true", "--seed", "1",
                   "--seeds", "2", "--transactions", "40"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "left out" in out and "t_rowid" in out
    assert sum(line.startswith("ok ") for line in out.splitlines()) == 2, out
