"""Real Craft bytes written by TiCDC's own Go encoder (../shared/real).

Every Craft file in the corpus is enumerated from its directory and must decode into exactly
what ../shared/real/README.md (§1b) states. The tolerances these need are listed in
docs/protocols/craft.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pyticdc import DecodeError, Op
from pyticdc.codec import craft
from pyticdc.model import ActionType
from real_corpus import Summary, names, stamp, summary

#: Every test here runs with the fast path's C helpers and with its pure-Python form.
pytestmark = pytest.mark.usefixtures("fast_path_form")

CREATE_SCHEMA, DROP_SCHEMA, CREATE_TABLE = ActionType.CREATE_SCHEMA, ActionType.DROP_SCHEMA, ActionType.CREATE_TABLE
TS = 1624284170621946000  # §1b: Unix-epoch nanoseconds, not TSOs
NULL_COLUMN = (("null", 6, 0),)
#: Every Craft file in the corpus → its one event (README §1b).
CRAFT_EXPECTED: dict[str, Summary] = {
    "ddl_0": ("ddl", TS + 4, "a", "", CREATE_SCHEMA, "create database a;"),
    "ddl_1": ("ddl", TS + 7, "a", "", DROP_SCHEMA, "drop database a;"),
    "ddl_2": ("ddl", TS + 10, "a", "", CREATE_SCHEMA, "create database a;"),
    "ddl_3": ("ddl", TS + 13, "a", "c", CREATE_TABLE, "create table c(id int primary key);"),
    "row_0": ("row", Op.INSERT, TS + 16, "test", "test", 0, {"null": None}, None, NULL_COLUMN),
    "row_1": ("row", Op.INSERT, TS + 19, "test", "test", 0, {"null": None}, None, NULL_COLUMN),
    "row_2": ("row", Op.INSERT, TS + 22, "test", "test", 0, {"null": None}, None, NULL_COLUMN),
    "rts_0": ("resolved", TS),
    "rts_1": ("resolved", TS + 1),
    "rts_2": ("resolved", TS + 2),
}


def craft_files(real: Path) -> dict[str, Path]:
    """Every Craft file in the corpus (value only: Craft has no Kafka key)."""
    folder = real / "tibigdata" / "craft"
    assert names(folder) == ["value"]
    return {name: folder / "value" / name for name in names(folder / "value")}


def test_every_craft_file_is_found_and_expected(real_dir: Path) -> None:
    files = craft_files(real_dir)
    assert len(files) == 10
    assert sorted(files) == sorted(CRAFT_EXPECTED)


@pytest.mark.parametrize("name", sorted(CRAFT_EXPECTED))
def test_craft_file_decodes_to_the_stated_event(real_dir: Path, name: str) -> None:
    data = craft_files(real_dir)[name].read_bytes()
    decoder = craft.Decoder()
    events = decoder.decode(data)
    assert [summary(e) for e in events] == [CRAFT_EXPECTED[name]]
    # The fast path (rows) and the reference path agree on real bytes too.
    assert craft.Decoder().decode_reference(data) == events
    view = craft.explain(data)
    header_size, dict_size = view["size_tables"][0]
    assert header_size == 13
    if name.startswith("rts"):
        # No dictionary, an empty body, and null (-1) partition, schema and table.
        assert (dict_size, view["size_tables"][1], view["term_dictionary"]) == (0, [0], [])
        assert (view["events"][0]["schema"], view["events"][0]["table"], view["events"][0]["partition"]) == \
            (None, None, -1)
    elif name.startswith("row"):
        # The dictionary is deduplicated: schema and table "test" are one term, id 0.
        assert view["term_dictionary"] == ["test", "null"]
        assert b"testnull" in data and data.count(b"test") == 1
        (group,) = view["events"][0]["column_groups"]
        assert group["group_type"] == "new" and group["columns"][0]["raw_hex"] is None
    else:
        # A null table (-1) for the schema DDLs: no empty-string term is written for it.
        table = "c" if name == "ddl_3" else None
        assert view["events"][0]["table"] == table
        assert view["term_dictionary"] == ["a"] + ([table] if table else [])


def test_craft_ts_non_decreasing(real_dir: Path) -> None:
    files = craft_files(real_dir)
    for kind in ("rts", "row", "ddl"):
        stamps = [stamp(e) for name in sorted(files) if name.startswith(kind)
                  for e in craft.decode(files[name].read_bytes())]
        assert stamps == sorted(stamps) and len(stamps) >= 3


@pytest.mark.parametrize("name", sorted(CRAFT_EXPECTED))
def test_truncated_craft_files_raise_decode_error(real_dir: Path, name: str) -> None:
    data = craft_files(real_dir)[name].read_bytes()
    decoder = craft.Decoder()
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decoder.decode(data[:cut])
