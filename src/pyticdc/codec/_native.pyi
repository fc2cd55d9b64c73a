"""Types of the optional C helpers (pyticdc/codec/_native.c)."""

from pyticdc.model import Row

def craft_image(
    buf: bytes, at: int, end: int, kinds: bytes, names: tuple[str, ...], row_type: type[Row], /
) -> Row | None:
    """A Craft column group's nullable bytes chunk as a row image, or None (a decline)."""
