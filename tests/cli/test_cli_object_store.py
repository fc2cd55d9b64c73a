"""``replicate --to URL``: object-store warehouses are taken; an unknown scheme is one line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.cli import main
from pyticdc.replica.storage import RemotePath


@pytest.mark.parametrize("url", ["foo://bucket/warehouse", "s3://", "http://host/w"])
def test_unusable_warehouse_url_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str) -> None:
    capture = tmp_path / "c.jsonl"
    capture.write_text("")
    with pytest.raises(SystemExit) as exited:  # argparse's usage error: before anything is read or started
        main(["replicate", "--from", str(capture), "-p", "craft", "--to", url])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyticdc replicate: error: ")
    assert url in lines[0]


def test_warehouse_urls_and_directories() -> None:
    from pyticdc.cli.replicate_command import warehouse_path

    assert warehouse_path("file:///tmp/wh") == Path("/tmp/wh")
    assert warehouse_path("./wh") == Path("wh")
    for url in ("s3://bucket/warehouse", "gs://b/w", "abfss://c@a.dfs.core.windows.net/w"):
        assert isinstance(warehouse_path(url), RemotePath) and str(warehouse_path(url)) == url


def test_unreachable_object_store_is_one_line_before_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    capture = tmp_path / "c.jsonl"
    capture.write_text("")
    for name, value in {"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ACCESS_KEY_ID": "a",
                        "AWS_SECRET_ACCESS_KEY": "b", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}.items():
        monkeypatch.setenv(name, value)
    code = main(["replicate", "--from", str(capture), "-p", "craft", "--to", "s3://nobucket/wh",
                 "--storage-option", "AWS_MAX_RETRIES=0"])
    assert code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "cannot reach the warehouse s3://nobucket/wh" in lines[0]


def test_storage_option_without_value_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture = tmp_path / "c.jsonl"
    capture.write_text("")
    code = main(["replicate", "--from", str(capture), "-p", "craft", "--to", "s3://b/wh", "--storage-option", "x"])
    assert code == 2
    assert "KEY=VALUE" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["distributed", "delta-spark"])
def test_distributed_engines_to_an_object_store_are_refused_before_the_store_is_contacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, engine: str,
) -> None:
    capture = tmp_path / "c.jsonl"
    capture.write_text("")
    # An endpoint nothing listens on: contacting it would say "cannot reach", not the engine's limit.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    code = main(["replicate", "--from", str(capture), "-p", "craft", "--to", "s3://bucket/wh", "--engine", engine])
    assert code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "local or mounted warehouses only" in lines[0] and "--engine driver" in lines[0]
