"""``replicate --to s3://...``: one line and exit 2 until object stores are supported (issue 14, finding 8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc.cli import main


@pytest.mark.parametrize("url", ["s3://bucket/warehouse", "gs://b/w", "abfss://c@a.dfs.core.windows.net/w"])
def test_object_store_warehouse_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str,
) -> None:
    capture = tmp_path / "c.jsonl"
    capture.write_text("")
    with pytest.raises(SystemExit) as exited:  # argparse's usage error: before anything is read or started
        main(["replicate", "--from", str(capture), "-p", "craft", "--to", url])
    assert exited.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pyticdc replicate: error: ")
    assert "not supported yet" in lines[0] and url in lines[0]


def test_file_url_warehouse_is_a_directory() -> None:
    from pyticdc.cli.replicate_command import warehouse_path

    assert warehouse_path("file:///tmp/wh") == Path("/tmp/wh")
    assert warehouse_path("./wh") == Path("wh")
