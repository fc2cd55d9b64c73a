"""One type mapping: its options, and the same Delta schema through every protocol (differences documented)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyticdc.arrow.rows import EventRowBuilder
from pyticdc.arrow.types import DEFAULT_TYPES, TYPE_OPTIONS, TypeMapping, column_arrow_type, project_rows
from pyticdc.codec import PROTOCOLS
from pyticdc.errors import ConfigError
from pyticdc.model import ColumnInfo, KafkaRecord, Op, Row, RowChange, TableInfo, TypeCode
from pyticdc.sim.workload import WorkloadConfig, simulate

T = TypeCode
DOCS = Path(__file__).resolve().parents[2] / "docs" / "types.md"
OPTIONS: dict[str, dict[str, str]] = {"canal-json": {"enable-tidb-extension": "true"},
                                      "debezium": {"enable-tidb-extension": "true"}}


def _typed(column: ColumnInfo, texts: list[str | None], mapping: TypeMapping) -> list[Any]:
    info = TableInfo(schema="s", table="t", columns=(column,))
    builder = EventRowBuilder()
    for offset, text in enumerate(texts):
        builder.add_event(KafkaRecord(topic="t", partition=0, offset=offset), 0, RowChange(
            op=Op.INSERT, schema="s", table="t", commit_ts=1, columns=Row({column.name: text}), table_info=info))
    batch = project_rows(builder.to_batch(), info, mapping=mapping)
    assert batch.schema.field(column.name).type == column_arrow_type(column, mapping)
    values: list[Any] = batch.column(column.name).to_pylist()
    return values


def test_default_mapping_is_the_documented_one() -> None:
    assert TypeMapping.parse(None) == DEFAULT_TYPES == TypeMapping(tinyint1_as_boolean=False, time_as="micros")
    assert {name: default for name, default, _, _ in TYPE_OPTIONS} == {"tinyint1-as-boolean": "false",
                                                                      "time-as": "micros"}


def test_tinyint1_as_boolean_only_for_width_one() -> None:
    on = TypeMapping.parse({"tinyint1-as-boolean": "true"})
    flag = ColumnInfo(name="b", type_code=T.TINY, flen=1)
    assert _typed(flag, ["0", "1", "-7", None], on) == [False, True, True, None]
    assert _typed(flag, ["0", "1", "-7", None], DEFAULT_TYPES) == [0, 1, -7, None]
    # TINYINT(4), or a width the protocol did not carry (-1): still a number.
    assert column_arrow_type(ColumnInfo(name="n", type_code=T.TINY, flen=4), on) == pa.int8()
    assert column_arrow_type(ColumnInfo(name="n", type_code=T.TINY), on) == pa.int8()
    assert column_arrow_type(ColumnInfo(name="n", type_code=T.BIT, flen=1), on) == pa.binary()


def test_time_as_micros_or_string() -> None:
    time3 = ColumnInfo(name="t", type_code=T.TIME, decimal=3)
    texts: list[str | None] = ["-838:59:59.000", "12:00:01.5", "00:00:00", None]
    expected = [-(838 * 3600 + 59 * 60 + 59) * 10**6, (12 * 3600 + 1) * 10**6 + 500_000, 0, None]
    assert _typed(time3, texts, DEFAULT_TYPES) == expected
    assert _typed(time3, texts, TypeMapping.parse({"time_as": "string"})) == texts


@pytest.mark.parametrize("options", [{"time-as": "interval"}, {"tinyint1-as-boolean": "yes"}, {"bit-as": "x"}])
def test_bad_options_are_config_errors(options: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=next(iter(options))):
        TypeMapping.parse(options)


# --------------------------------------------------------------------------- every protocol, one schema
def _replica_schemas(protocol: str, events: list[Any], warehouse: Path) -> dict[str, dict[str, pa.DataType]]:
    from deltalake import DeltaTable

    from pyticdc.replica.pipeline import Replicator
    from pyticdc.routing import Router

    options = OPTIONS.get(protocol, {})
    routed = Router(protocol, options, default_topic="cdc", partitions=2).route(events)
    offsets: dict[int, int] = {}
    records = []
    for record in routed:
        offset = offsets[record.partition] = offsets.get(record.partition, -1) + 1
        records.append(KafkaRecord(topic=record.topic, partition=record.partition, offset=offset, key=record.key,
                                   value=record.value))
    Replicator(warehouse, protocol, options, partitions={"cdc": 2}).process(records)
    schemas: dict[str, dict[str, pa.DataType]] = {}
    for path in sorted(warehouse.glob("sim/*")):
        arrow = pa.schema(DeltaTable(str(path)).schema().to_arrow())
        schemas[path.name] = {field.name: field.type for field in arrow}
    return schemas


def _differences_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(r"^## Differences that remain\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, "docs/types.md has no 'Differences that remain' section"
    return match.group(1)


@pytest.mark.parametrize("seed", [3, 5])
def test_every_protocol_gives_the_same_delta_schema(seed: int, tmp_path: Path) -> None:
    history = simulate(seed, WorkloadConfig(transactions=80))
    by_protocol = {p: _replica_schemas(p, list(history.events), tmp_path / p) for p in PROTOCOLS}
    tables = set(by_protocol["simple"])
    assert len(tables) >= 3 and all(set(s) == tables for s in by_protocol.values())
    section = _differences_section()
    seen: set[str] = set()
    for table in sorted(tables):
        columns = {name for schemas in by_protocol.values() for name in schemas[table]}
        for name in sorted(columns):
            types = {p: schemas[table].get(name) for p, schemas in by_protocol.items()}
            if len(set(map(str, types.values()))) == 1:
                continue
            if name == "_tidb_rowid":
                # Only Open Protocol carries the row id; the others find such rows otherwise.
                assert [p for p, kind in types.items() if kind is not None] == ["open-protocol"]
            elif name == "_pyticdc_row_digest":
                # Rows without handle and without row id are found by digest (Canal-JSON names only primary keys).
                assert types["open-protocol"] is None, table
            else:
                # A DECIMAL Debezium carried as a double that rounded past its precision: widened to 38 digits.
                others = {kind for p, kind in types.items() if p != "debezium"}
                debezium = types["debezium"]
                assert len(others) == 1 and debezium is not None and pa.types.is_decimal(debezium), (table, name, types)
                declared = others.pop()
                assert declared is not None and pa.types.is_decimal(declared) and declared.precision < 38, (
                    table, name, types)
                assert (debezium.precision, debezium.scale) == (38, declared.scale), (table, name, types)
                name = "DECIMAL"
            seen.add(name)
            assert f"`{name}`" in section, f"docs/types.md does not list the {name} difference"
    # The upstream columns agree everywhere else: the check above is not vacuous.
    assert sum(len(s) for s in by_protocol["craft"].values()) > 25
    assert "_tidb_rowid" in seen
