"""``pyticdc replicate`` under a supervisor: per-batch log lines and the metrics port (no Spark)."""

from __future__ import annotations

import io
from argparse import Namespace
from pathlib import Path
from typing import Any

import pytest

from pyticdc.cli.replicate_ops import Operations
from pyticdc.errors import ConfigError
from pyticdc.replica.pipeline import BatchReport


def _report() -> BatchReport:
    return BatchReport(version=3, records=120, rows_applied=40, consistent_ts=1_700_000_000_000 << 18, rejected=2,
                       seconds=0.75, rows_by_table={("s", "t"): 40})


def _args(**overrides: Any) -> Namespace:
    return Namespace(**{"stream": True, "progress": None, "metrics_port": None, "metrics_host": "127.0.0.1",
                        **overrides})


def test_streaming_under_a_supervisor_logs_one_line_per_batch() -> None:
    seen: list[BatchReport] = []
    log = io.StringIO()  # not a terminal
    operations = Operations(_args(), seen.append, stream=log)
    report = _report()
    operations(report)
    assert seen == [report]
    line = log.getvalue()
    assert line.count("\n") == 1 and line.endswith("\n")
    assert "batch 3: records_read=120 rows_applied=40 quarantined=2 watermark_lag=" in line
    assert "consistency=watermark seconds=0.75" in line
    # Not streaming, or --no-progress: no log lines.
    for args in (_args(stream=False), _args(progress=False)):
        quiet = io.StringIO()
        Operations(args, seen.append, stream=quiet)(report)
        assert quiet.getvalue() == ""


def test_a_metrics_port_that_cannot_be_bound_is_a_usage_error() -> None:
    first = Operations(_args(metrics_port=0), lambda _: None)
    try:
        assert first.server is not None
        assert first.describe() == f"metrics at http://127.0.0.1:{first.server.port}/metrics"
        with pytest.raises(ConfigError, match="cannot listen"):
            Operations(_args(metrics_port=first.server.port), lambda _: None)
        with pytest.raises(ConfigError, match=r"0\.\.65535"):
            Operations(_args(metrics_port=70000), lambda _: None)
    finally:
        first.close()


def test_convert_old_protocol_spellings_work_with_a_one_line_note(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from pyticdc.cli import main

    capture = tmp_path / "c.jsonl"
    assert main(["produce", "-p", "canal-json", "--transactions", "3", "-O", str(capture)]) == 0
    capsys.readouterr()
    old = tmp_path / "old.jsonl"
    new = tmp_path / "new.jsonl"
    assert main(["convert", str(capture), "--from", "canal-json", "--to", "craft", "-O", str(old)]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "deprecated" in line]
    assert notes == ["note: convert --from is deprecated, use -p/--protocol (--from/--to name places, as in replicate)",
                     "note: convert --to is deprecated, use --output-protocol (--from/--to name places, as in "
                     "replicate)"]
    assert main(["convert", str(capture), "-p", "canal-json", "--output-protocol", "craft", "-O", str(new)]) == 0
    assert "deprecated" not in capsys.readouterr().err
    assert old.read_bytes() == new.read_bytes()
    assert main(["convert", str(capture), "-O", str(new)]) == 2
    assert "--output-protocol PROTOCOL" in capsys.readouterr().err


@pytest.mark.parametrize(("produce", "extra", "said", "message"), [
    ([], ["--require-watermarks"], "detected protocol canal-json", "carries no watermarks"),
    (["-o", "enable-tidb-extension=true"], ["--ending-offsets", "latest"],
     "detected protocol canal-json (-o enable-tidb-extension=true)", "the source is capture files"),
    (["-o", "enable-tidb-extension=true"], ["--checkpoint", "cp"], "detected protocol canal-json", "with --stream"),
])
def test_replicate_detects_the_protocol_and_checks_options_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], produce: list[str], extra: list[str], said: str,
        message: str) -> None:
    from pyticdc.cli import main

    capture = tmp_path / "c.jsonl"
    assert main(["produce", "-p", "canal-json", *produce, "--transactions", "5", "-O", str(capture)]) == 0
    capsys.readouterr()
    assert main(["replicate", "--from", str(capture), "--to", str(tmp_path / "wh"), *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and message in err.splitlines()[-1]
    assert not (tmp_path / "wh").exists()
