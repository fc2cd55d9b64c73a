"""Types of the optional C helpers (pyticdc/codec/_native.c)."""

from typing import Any

from pyticdc.model import Row

def craft_image(
    buf: bytes, at: int, end: int, kinds: bytes, names: tuple[str, ...], row_type: type[Row], /
) -> Row | None:
    """A Craft column group's nullable bytes chunk as a row image, or None (a decline)."""

def simple_json_row(
    plan: tuple[Any, ...], table_id: int, commit_ts: int, build_ts: int, first: Any, second: Any, location: str, /
) -> bytes | None:
    """A Simple-JSON row message from its writer's plan and images, or None (a decline)."""

def row_text(row: dict[str, Any], binary: frozenset[str], base64_names: list[str] | None, /) -> tuple[
    list[str], list[str | None]]:
    """Keys and canonical texts of a row image (pyticdc.arrow.rows.row_text)."""

def row_json(row: dict[str, Any], binary: frozenset[str], base64_names: list[str] | None, /) -> str | None:
    """A row image's canonical texts as one JSON object text, or None (a decline)."""

def avro_image(buf: bytes, pos: int, plan: tuple[Any, ...], row_type: type[Row], /) -> tuple[Row, int] | None:
    """A Simple-Avro row image in table order as (row, offset after it), or None (a decline)."""

def canal_image(image: Any, plan: tuple[Any, ...], /) -> bytes | None:
    """A Canal-JSON row image as TiCDC's easyjson writes it, or None (a decline)."""

def avro_row_image(image: Any, plan: tuple[Any, ...], location: bytes, /) -> bytes | None:
    """A Simple-Avro row image's map as TiCDC writes it, or None (a decline)."""

def change_digests(
    names: str, table_id: int, commit_ts: int, op: str, pre: dict[str, Any] | None, post: dict[str, Any] | None,
    columns: tuple[str, ...], /
) -> tuple[bytes, bytes | None, bytes | None] | None:
    """A keyed change row's identity and handle digests, or None (a decline)."""

def text_digest(text: str, /) -> bytes:
    """blake2b(text.encode('utf-8', 'surrogatepass'), digest_size=16).digest()."""
