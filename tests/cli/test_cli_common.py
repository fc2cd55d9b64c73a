"""One command-line vocabulary: shared flags, documented defaults, one-line errors, the progress bar, base install."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from pyticdc.cli import build_parser, main
from pyticdc.cli.common import ProgressBar, input_topics
from pyticdc.codec import make_encoder
from pyticdc.io.capture import write_capture
from pyticdc.model import KafkaRecord
from pyticdc.sim.sample import sample_events

COMMANDS = ("decode", "inspect", "capture", "convert", "produce", "selftest", "vectors")
READERS = ("decode", "inspect", "convert")


def subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    chosen: argparse.ArgumentParser = commands.choices[name]
    if name == "vectors":
        actions = next(a for a in chosen._actions if isinstance(a, argparse._SubParsersAction))
        chosen = actions.choices["check"]
    return chosen


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help_with_its_default(command: str) -> None:
    for action in subparser(command)._actions:
        if isinstance(action, argparse._HelpAction) or (not action.option_strings and action.nargs == "+"):
            continue
        flags = "/".join(action.option_strings) or action.dest
        assert action.help, f"{command} {flags} has no help"
        assert action.required or "default" in action.help or "required" in action.help, (
            f"{command} {flags}: help does not say its default: {action.help!r}")


def parse(command: str, *args: str) -> argparse.Namespace:
    return build_parser().parse_args([command, *args])


def test_readers_share_input_and_codec_flags() -> None:
    common = ["-b", "broker:9092", "-t", "a,b", "-t", "c", "--starting-offsets", "latest", "--ending-offsets",
              '{"a": {"0": 5}}', "--poll-timeout", "5", "--no-fail-on-data-loss", "-X", "acks=all",
              "-p", "canal-json", "-o", "enable-tidb-extension=true", "--capture-format", "kcat"]
    extra = {"decode": [], "inspect": [], "convert": ["--output-protocol", "craft"]}
    seen = []
    for command in READERS:
        args = parse(command, *common, *extra[command])
        seen.append((args.bootstrap_servers, input_topics(args), args.starting_offsets, args.ending_offsets,
                     args.poll_timeout, args.fail_on_data_loss, args.kafka_settings, args.protocol, args.options,
                     args.capture_format))
    assert seen == [("broker:9092", ["a", "b", "c"], "latest", '{"a": {"0": 5}}', 5.0, False, ["acks=all"],
                     "canal-json", ["enable-tidb-extension=true"], "kcat")] * len(READERS)
    # capture reads Kafka only, with the same flags, and writes -O like convert and produce.
    args = parse("capture", *common[:15], "-O", "out.jsonl", "--output-format", "jsonl")
    assert (args.bootstrap_servers, input_topics(args), args.output, args.output_format) == (
        "broker:9092", ["a", "b", "c"], Path("out.jsonl"), "jsonl")
    assert input_topics(parse("decode", "-t", "cdc_(a|b),x")) == ["cdc_(a|b),x"]  # a regex is kept whole


def test_writers_share_output_flags_and_produce_aliases() -> None:
    convert = parse("convert", "x.jsonl", "--output-protocol", "craft", "--output-option", "max-batch-size=4",
                    "--output-topic", "cdc_{schema}", "-O", "y.parquet", "--partitions", "2")
    produce = parse("produce", "-p", "craft", "-o", "max-batch-size=4", "--output-topic", "cdc_{schema}", "-O",
                    "y.parquet", "--partitions", "2")
    assert (convert.target, convert.target_options) == (produce.protocol, produce.options)
    for args in (convert, produce):
        assert (args.output_topic, args.output, args.partitions) == ("cdc_{schema}", Path("y.parquet"), 2)
    # produce reads no Kafka: -b and --topic name where it writes.
    aliased = parse("produce", "-p", "craft", "-b", "broker:9092", "--topic", "t")
    canonical = parse("produce", "-p", "craft", "--output-bootstrap-servers", "broker:9092", "--output-topic", "t")
    assert vars(aliased) == vars(canonical)
    assert (aliased.output_bootstrap_servers, aliased.output_topic) == ("broker:9092", "t")
    # convert's old spellings still parse: --from/--from-option/--to/--to-option are -p, -o, --output-protocol and
    # --output-option (--from/--to now name places, as in replicate).
    assert vars(parse("convert", "--from", "simple", "--from-option", "encoding-format=avro", "--to", "craft")) == \
        vars(parse("convert", "-p", "simple", "-o", "encoding-format=avro", "--output-protocol", "craft"))
    selftest = parse("selftest", "-p", "craft", "-p", "simple", "-o", "encoding-format=avro")
    assert (selftest.protocol, selftest.option) == (["craft", "simple"], ["encoding-format=avro"])


def test_usage_errors_are_one_line_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["decode", "--bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("pyticdc decode: error: unrecognized arguments: --bogus "
                                       "(see pyticdc decode --help)\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["capture", "-b", "broker:9092", "-t", "cdc"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the following arguments are required: -O/--output" in err
    assert main(["decode", "-b", "localhost:9", "-t", "cdc_.*", "-t", "other"]) == 2
    assert capsys.readouterr().err == ("pyticdc decode: error: -t/--topic takes topic names or one regular "
                                       "expression, not both: cdc_.*, other\n")
    assert main(["vectors", "check", "/no/such/vectors.json"]) == 2
    assert capsys.readouterr().err == "pyticdc vectors: error: no such file: /no/such/vectors.json\n"
    assert main(["selftest", "-p", "craft", "-o", "max-batch-size"]) == 2
    assert capsys.readouterr().err == "pyticdc selftest: error: -o/--option takes NAME=VALUE, got 'max-batch-size'\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_log_a_terminal_and_off() -> None:
    log = io.StringIO()
    with ProgressBar("copy", 100, stream=log) as bar:
        for _ in range(100):
            bar.update()
    lines = log.getvalue().splitlines()
    # the first record, then every tenth; nothing more at close since 100 % was written
    assert len(lines) == 11 and lines[0].startswith("copy [----") and " 1/100 records" in lines[0]
    assert "[##############################] 100/100 records 100%" in lines[-1]
    unknown = io.StringIO()
    with ProgressBar("read", None, stream=unknown, unit="events") as bar:
        bar.update(5)
    assert unknown.getvalue().startswith("read 5 events ") and unknown.getvalue().count("\n") == 1
    terminal = Terminal()
    with ProgressBar("copy", 5, stream=terminal) as bar:
        bar.update(5)
    assert terminal.getvalue().startswith("\r") and terminal.getvalue().endswith("\n")
    assert "5/5 records 100%" in terminal.getvalue()
    silent = io.StringIO()
    with ProgressBar("copy", 5, stream=silent, enabled=False) as bar:
        bar.update(5)
    assert silent.getvalue() == "" and bar.count == 5


# --------------------------------------------------------------------------- the base install (no pyarrow)
NO_PYARROW = ("import sys; sys.modules['pyarrow'] = None; from pyticdc.cli import main; "
              "sys.exit(main(sys.argv[1:]))")


def without_pyarrow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_PYARROW, *args], capture_output=True, text=True, timeout=120)


def test_decode_inspect_convert_work_without_pyarrow(tmp_path: Path) -> None:
    messages = make_encoder("craft").encode(sample_events())
    capture = tmp_path / "craft.jsonl"
    write_capture(capture, [KafkaRecord(topic="cdc", partition=0, offset=i, key=m.key, value=m.value)
                            for i, m in enumerate(messages)])
    decoded = without_pyarrow("decode", str(capture), "--kind", "row")
    assert decoded.returncode == 0, decoded.stderr
    assert "detected protocol craft" in decoded.stderr
    rows = [orjson.loads(line) for line in decoded.stdout.splitlines()]
    assert [r["op"] for r in rows] == ["insert", "insert", "update", "delete"]
    inspected = without_pyarrow("inspect", str(capture), "-p", "craft", "--output-format", "json")
    assert inspected.returncode == 0, inspected.stderr
    assert orjson.loads(inspected.stdout)["protocol"] == "craft"
    converted = without_pyarrow("convert", str(capture), "--output-protocol", "open-protocol", "-O",
                                str(tmp_path / "o.jsonl"))
    assert converted.returncode == 0, converted.stderr
    assert (tmp_path / "o.jsonl").stat().st_size > 0
    # Parquet is the one format that needs pyarrow: a one-line error, status 2, nothing written.
    parquet = tmp_path / "craft.parquet"
    write_capture(parquet, [KafkaRecord(topic="cdc", partition=0, value=m.value) for m in messages])
    to_parquet = ["convert", str(capture), "--output-protocol", "craft", "-O", str(tmp_path / "x.parquet")]
    for args in (["decode", str(parquet)], to_parquet):
        failed = without_pyarrow(*args)
        assert failed.returncode == 2
        assert failed.stderr.count("\n") == 1 and "Parquet capture files need pyarrow" in failed.stderr
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize(("pure", "expected"), [("", "on"), ("1", "off, PYTICDC_PURE_PYTHON is set")])
def test_version_says_whether_the_c_helpers_are_in_use(pure: str, expected: str) -> None:
    from pyticdc.codec import _fastpath

    if _fastpath._NATIVE is None:
        pytest.skip("the C helpers are not built here")
    done = subprocess.run([sys.executable, "-m", "pyticdc", "--version"], capture_output=True, text=True,
                          env={**os.environ, "PYTICDC_PURE_PYTHON": pure}, check=True)
    assert done.stdout.strip().endswith(f"(C helpers: {expected})")


def test_version_without_the_c_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    from pyticdc.cli import version_text
    from pyticdc.codec import _fastpath

    monkeypatch.setattr(_fastpath, "_NATIVE", None)
    monkeypatch.setattr(_fastpath, "_native_in_use", [None])
    assert version_text().endswith("(C helpers: not built, no C compiler at install)")
