"""docs/spark.md and docs/types.md against the code: the option tables are generated, and must be current."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pyticdc.arrow.types import TYPE_OPTIONS
from pyticdc.spark.options import OPTIONS, SOURCE_OPTIONS, SourceOptions, options_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs"
BEGIN, END = "<!-- generated: python -m pyticdc.spark.options --markdown -->", "<!-- end generated -->"


def _generated(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    match = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    assert match, f"{path.name} has no generated options block"
    return match.group(1)


def test_spark_doc_option_tables_are_the_code_s() -> None:
    assert _generated(DOCS / "spark.md") == options_markdown(), (
        "docs/spark.md is out of date: paste `python -m pyticdc.spark.options --markdown` between the markers")


def test_types_doc_lists_the_type_options() -> None:
    text = (DOCS / "types.md").read_text(encoding="utf-8")
    for name, default, _, _ in TYPE_OPTIONS:
        assert f"`{name}`" in text and f"`{default}`" in text, name


def test_generator_command_prints_the_tables() -> None:
    done = subprocess.run([sys.executable, "-m", "pyticdc.spark.options", "--markdown"], capture_output=True,
                          text=True, check=True)
    assert done.stdout == options_markdown()
    usage = subprocess.run([sys.executable, "-m", "pyticdc.spark.options"], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1


def test_every_parsed_option_is_documented_and_defaults_agree() -> None:
    # The parser accepts exactly the documented names (plus the `paths` alias and kafka.* / codec options).
    documented = {o.name.lower() for o in OPTIONS if not o.name.startswith("kafka.")}
    assert SOURCE_OPTIONS == documented | {"paths"}
    kafka = SourceOptions.parse({"protocol": "craft", "kafka.bootstrap.servers": "h:1", "subscribe": "t"},
                                check_decoder=False)
    files = SourceOptions.parse({"protocol": "craft", "path": "x"}, check_decoder=False)
    defaults = {o.name: o.default for o in OPTIONS}
    parsed = {"output": kafka.output, "batchRows": kafka.batch_rows, "failOnDataLoss": kafka.fail_on_data_loss,
              "schemaLookback": kafka.schema_lookback, "kafkaConsumer.pollTimeoutMs": kafka.poll_timeout_ms,
              "groupIdPrefix": kafka.group_id_prefix, "captureFormat": files.capture_format,
              "maxPartitionBytes": files.max_partition_bytes}
    for name, value in parsed.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        assert defaults[name].startswith(f"`{text}`"), (name, value, defaults[name])
    assert kafka.max_offsets_per_trigger is None and defaults["maxOffsetsPerTrigger"] == "unlimited"
