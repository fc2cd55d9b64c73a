"""``pyticdc selftest``: the oracle as a command (issue 6), over every protocol and dispatcher."""

from __future__ import annotations

import pytest

from pyticdc.cli import main
from pyticdc.codec import PROTOCOLS


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_selftest_passes_for_every_dispatcher_with_all_faults(protocol: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["selftest", "--protocol", protocol, "--seed", "9101", "--seeds", "3", "--transactions", "40",
                   "--dispatcher", "table", "--dispatcher", "index-value", "--dispatcher", "ts", "--faults", "all"])
    out = capsys.readouterr().out
    assert status == 0, out
    lines = [line for line in out.splitlines() if line.startswith("ok ")]
    assert len(lines) == 9
    assert all("replica equals source at" in line and "3 crashes, 2 quarantined" in line for line in lines)


def test_selftest_simple_avro_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest", "--protocol", "simple", "--option", "encoding-format=avro", "--seed", "77"]) == 0
    assert "encoding-format" in capsys.readouterr().out


def test_selftest_reports_the_first_difference_and_fails(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import msgspec

    from pyticdc.consumer import ApplyUnit
    from pyticdc.sim.replica import Replica

    original = Replica.apply

    def drop_deletes(self: Replica, unit: ApplyUnit) -> None:
        # a broken applier that loses every DELETE: the oracle must catch it
        if unit.rows:
            unit = msgspec.structs.replace(unit, rows=tuple(r for r in unit.rows if r.op.value != "delete"))
        original(self, unit)

    monkeypatch.setattr(Replica, "apply", drop_deletes)
    status = main(["selftest", "--protocol", "canal-json", "--seed", "3", "--faults", "none"])
    out = capsys.readouterr().out
    assert status == 1
    assert out.startswith("FAIL canal-json") and "differs from the truth" in out


def test_selftest_rejects_unknown_faults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["selftest", "--faults", "meteors"]) == 2
    assert "unknown fault(s) meteors" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_selftest_soak(protocol: str) -> None:
    """Hundreds of seeds (skipped by CI's default run: `-m slow` to include)."""
    assert main(["selftest", "--protocol", protocol, "--seed", "5000", "--seeds", "200", "--dispatcher", "table",
                 "--dispatcher", "index-value", "--dispatcher", "ts", "--faults", "all"]) == 0
