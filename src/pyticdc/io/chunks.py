"""Small iteration helpers shared by the CLI and the Spark pipeline."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["chunked"]

_T = TypeVar("_T")


def chunked(items: Iterable[_T], size: int) -> Iterator[list[_T]]:
    """Consecutive lists of ``size`` items (the last one shorter), like ``itertools.batched`` (3.12+)."""
    if size < 1:
        raise ValueError("chunk size must be >= 1")
    chunk: list[_T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
