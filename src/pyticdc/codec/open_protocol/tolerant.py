"""What older TiCDC encoders and hand-built test columns wrote, read as TiCDC's decoders read it.

The tolerances (docs/protocols/open-protocol.md, "Tolerances"): column objects without ``"f"``
(the v4.x form, only the deprecated ``"h"``), several DDL or resolved events in one message and
empty batches (the 2020 ``JSONEventBatchDecoder``; see ``Decoder``), keys without
``scm``/``tbl``, and text in TINYINT columns that carry no BinaryFlag.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from pyticdc.codec.open_protocol.message import BINARY, HANDLE
from pyticdc.model import TypeCode, Value

#: The one integer type whose unflagged columns may carry text (see ``keeps_text``).
TEXT_TOLERANT_TYPE: Final = TypeCode.TINY


def legacy_flags(handle: bool | None) -> int:
    """The flags of a legacy column object, which carries only the deprecated ``"h"``."""
    return HANDLE if handle else 0


def keeps_text(type_code: int, flags: int) -> bool:
    """Whether a column's text values are kept verbatim: a TINYINT without BinaryFlag.

    Every column TiDB mounts as a number has the binary charset and so the flag (reference
    §1.2), so its absence marks a hand-built (test) column. TiCDC's own 2020-2021 encoder tests
    put text ("aa", "8888…") only in such TINYINT columns and the Go decoder of that era passed
    it through; the tolerance goes no further than that evidence, so other integer types and
    real (flagged) columns stay strict.
    """
    return type_code == TEXT_TOLERANT_TYPE and not flags & BINARY


def keep_text(reader: Callable[[Any], Value]) -> Callable[[Any], Value]:
    """``reader`` that also passes a JSON string through as a str."""
    def read(value: Any) -> Value:
        if type(value) is str:
            return value
        return reader(value)
    return read
