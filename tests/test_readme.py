"""The README stays true: its first two commands, and every codec option documented."""

from __future__ import annotations

from pathlib import Path

from pyticdc.codec.options import OPTION_DEFAULTS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_opens_with_the_two_commands() -> None:
    block = README.split("```", 2)[1].splitlines()
    commands = [line.split("#")[0].strip() for line in block[1:] if line.strip()]
    assert commands == ["python3 run.py demo", "python3 run.py test"]


def test_every_option_is_in_the_readme_table() -> None:
    for name in OPTION_DEFAULTS:
        assert f"| `{name}` |" in README, name
