"""A bounded run of ``benchmarks/fuzz_decoders.py``: every decoder configuration, a few hundred mutated
messages each, no escape, no unprintable event, no warm/fresh difference (the script runs 100,000+)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fuzz_decoders.py"


def _fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_decoders", _SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_decoders", module)
    spec.loader.exec_module(module)
    return module


FUZZ = _fuzzer()
#: Inputs per configuration: with 17 configurations, a few thousand in all, a few seconds.
INPUTS = 200


@pytest.mark.parametrize(("label", "protocol", "options"), FUZZ.CONFIGS, ids=[c[0] for c in FUZZ.CONFIGS])
def test_mutated_messages_give_decode_errors_or_printable_events(label: str, protocol: str,
                                                                  options: dict[str, Any]) -> None:
    counts = FUZZ.run(label, protocol, options, INPUTS, seed=11)
    assert counts.inputs == INPUTS
    assert (counts.escapes, counts.unprintable, counts.differences) == (0, 0, 0), counts.examples
    # Every input either decoded or raised a DecodeError; most mutations break a message.
    assert counts.decoded + counts.errors == INPUTS and counts.errors > INPUTS // 2


def test_the_fuzzer_counts_an_escape() -> None:
    # The harness itself: a decoder that raises anything but DecodeError is counted, not hidden.
    class Broken:
        def decode(self, value: bytes | None, key: bytes | None = None) -> list[Any]:
            raise KeyError("bug")

    with pytest.raises(KeyError):
        FUZZ._outcome(Broken(), b"{}", None)
