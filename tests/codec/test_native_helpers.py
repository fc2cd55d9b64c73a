"""The optional C helpers: built wherever the install had a C compiler, and switchable off."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from pyticdc.codec import _fastpath


def test_helpers_are_built_where_a_compiler_is() -> None:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: the pure-Python forms are the ones in use")
    assert _fastpath._NATIVE is not None, "setup.py's extension was not built by the install"


@pytest.mark.parametrize("pure", ["", "1"])
def test_pure_python_switch(pure: str) -> None:
    env = {**os.environ, "PYTICDC_PURE_PYTHON": pure}
    code = "from pyticdc.codec import _fastpath; print(_fastpath.native() is None)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(bool(pure) or _fastpath._NATIVE is None)


def test_use_native_switches_and_reports() -> None:
    before = _fastpath.native()
    try:
        assert _fastpath.use_native(False) is False and _fastpath.native() is None
        assert _fastpath.use_native(True) is (_fastpath._NATIVE is not None)
    finally:
        _fastpath.use_native(before is not None)
