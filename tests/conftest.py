"""Shared test configuration: Hypothesis profiles and the vectors directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

# CI runs on 2 shared cores: generation speed varies, so only the correctness checks stay on.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

VECTORS = Path(os.environ.get("PYTICDC_VECTORS", Path(__file__).resolve().parents[1].parent / "shared" / "vectors"))


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    """The golden vectors directory (``../shared/vectors`` or $PYTICDC_VECTORS)."""
    if not VECTORS.is_dir():
        pytest.skip(f"golden vectors not found at {VECTORS}")
    return VECTORS
