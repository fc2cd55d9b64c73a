"""What each protocol carries through Kafka, and what converting one protocol into another loses.

Capabilities (what each protocol can carry; default options unless noted)

=============================  ========  ============  =========================  ==============================
protocol                       resolved  commit ts     schema on the wire         notes
=============================  ========  ============  =========================  ==============================
open-protocol                  yes       exact         names, type codes, flags   DDL: query + type only; UPDATE
                                                                                  pre-image only with
                                                                                  open-protocol.output-old-value
craft                          yes       exact         names, type codes, flags   DDL: query + type only; FLOAT
                                                                                  widened to float64
canal-json                     no        ms (es<<18)   MySQL type text, pkNames   with enable-tidb-extension:
                                                                                  resolved ts and exact commit ts;
                                                                                  DDL type from Canal's event type
canal-json + extension         yes       exact         MySQL type text, pkNames
debezium                       no        exact         Kafka Connect schema       DECIMAL as double (precision
                                                                                  beyond float64 is lost); DDL
                                                                                  actions Debezium lacks dropped;
                                                                                  BIGINT UNSIGNED as int64 and
                                                                                  binary as base64 text (see
                                                                                  capability notes)
debezium + extension           yes       exact         Kafka Connect schema       resolved as op "m" messages
simple                         yes       exact         full table schema          rows carry no schema: a BOOTSTRAP
                                                       (BOOTSTRAP, DDL)           (synthesized here from whatever
                                                                                  schema the source carries) must
                                                                                  precede them
=============================  ========  ============  =========================  ==============================

Converting into a protocol that carries *more* than the source cannot invent what was lost: a Simple
BOOTSTRAP built from an Open source knows column names, type codes and flags but no lengths, charsets,
defaults or secondary indexes; a stream without resolved ts converted into one with them gets none
(or, with ``final_watermark``, a single one after the last event). :func:`conversion_notes` lists
these losses for a pair of protocols, so a caller can say so up front.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pyticdc.codec import canonical_protocol

__all__ = ["CAPABILITIES_TABLE", "SCHEMA_LEVELS", "Capability", "capability", "conversion_notes"]

#: How much table schema a protocol puts on the wire, least to most.
SCHEMA_LEVELS: Final = ("names", "type codes and flags", "mysql types", "full")
_NAMES, _FLAGS, _TYPES, _FULL = range(4)


@dataclass(frozen=True)
class Capability:
    """What one protocol, with given options, carries through Kafka."""

    protocol: str
    #: Resolved ts / watermark messages are sent.
    watermarks: bool
    #: Commit ts is exact (else only its physical milliseconds survive).
    exact_commit_ts: bool
    #: Index into SCHEMA_LEVELS of the schema a decoder can rebuild.
    schema_level: int
    #: DDL carries the table schema after it (and before it).
    ddl_schema: bool
    #: UPDATE carries its pre-image.
    old_value: bool
    #: Protocol-specific losses, one sentence each.
    notes: tuple[str, ...] = ()

    @property
    def schema(self) -> str:
        """Human name of the schema level."""
        return SCHEMA_LEVELS[self.schema_level]


def _truthy(options: Mapping[str, Any], *names: str, default: bool = False) -> bool:
    for name in names:
        for spelling in (name, name.replace("-", "_")):
            if spelling in options:
                value = options[spelling]
                return value is True or (isinstance(value, str) and value.lower() == "true")
    return default


def capability(protocol: str, options: Mapping[str, Any] | None = None) -> Capability:
    """The capability of ``protocol`` with TiCDC-named ``options`` (see the module docstring table)."""
    protocol = canonical_protocol(protocol)
    options = dict(options or {})
    extension = _truthy(options, "enable-tidb-extension")
    only_updated = _truthy(options, "only-output-updated-columns", "content-compatible")
    delete_keys = _truthy(options, "delete-only-output-handle-key-columns")
    notes: list[str] = []
    if delete_keys:
        notes.append("DELETE carries only the handle-key columns (delete-only-output-handle-key-columns)")
    if protocol == "open-protocol":
        old = _truthy(options, "open-protocol.output-old-value", "open-output-old-value", default=True)
        notes.append("DDL carries its query and type only, no table schema")
        if not old:
            notes.append("UPDATE has no pre-image (open-protocol.output-old-value=false)")
        if only_updated:
            notes.append("the UPDATE pre-image keeps only changed columns (only-output-updated-columns)")
        return Capability(protocol, True, True, _FLAGS, False, old, tuple(notes))
    if protocol == "craft":
        notes.append("DDL carries its query and type only, no table schema")
        return Capability(protocol, True, True, _FLAGS, False, True, tuple(notes))
    if protocol == "canal-json":
        if not extension:
            notes.append("no resolved ts (TIDB_WATERMARK needs enable-tidb-extension)")
            notes.append("commit ts keeps only its physical milliseconds (es); transactions committed in "
                         "the same millisecond can no longer be told apart or ordered")
        notes.append("DDL carries Canal's event type, not TiDB's action type, and no table schema")
        notes.append("no table ids or row ids")
        return Capability(protocol, extension, extension, _TYPES, False, True, tuple(notes))
    if protocol == "debezium":
        old = _truthy(options, "debezium-output-old-value", default=True)
        no_schema = _truthy(options, "debezium-disable-schema")
        if not extension:
            notes.append("no resolved ts (op 'm' watermarks need enable-tidb-extension)")
            notes.append("BIGINT UNSIGNED is carried as int64 (2**64-1 as -1, values from 2**63 negative) and binary "
                         "columns as base64 in a 'string': a replica reads both back where the table's DDL says "
                         "UNSIGNED or binary; a decoded row alone keeps them as carried")
        notes.append("DECIMAL is carried as a double: digits beyond float64 precision are lost")
        notes.append("DDL actions Debezium has no statement for are dropped")
        if not old:
            notes.append("UPDATE has no 'before' (debezium-output-old-value=false)")
        if no_schema:
            notes.append("no 'schema' part (debezium-disable-schema): column types are not on the wire")
        return Capability(protocol, extension, True, _NAMES if no_schema else _TYPES, True, old, tuple(notes))
    # simple
    notes.append("rows carry no schema: a consumer needs the table's BOOTSTRAP or DDL first")
    return Capability(protocol, True, True, _FULL, True, True, tuple(notes))


def _capability_rows() -> list[str]:
    rows = []
    for protocol, options in (("open-protocol", {}), ("craft", {}), ("canal-json", {}),
                              ("canal-json", {"enable-tidb-extension": True}), ("debezium", {}),
                              ("debezium", {"enable-tidb-extension": True}), ("simple", {})):
        cap = capability(protocol, options)
        name = protocol + (" + extension" if options else "")
        rows.append(f"{name:<24} resolved={'yes' if cap.watermarks else 'no':<3} "
                    f"commit_ts={'exact' if cap.exact_commit_ts else 'ms':<5} schema={cap.schema}")
    return rows


#: One line per protocol and extension setting: resolved ts, commit ts precision, schema level.
CAPABILITIES_TABLE: Final = "\n".join(_capability_rows())


def conversion_notes(
    source: str, target: str, source_options: Mapping[str, Any] | None = None,
    target_options: Mapping[str, Any] | None = None, *, final_watermark: bool | None = None,
) -> list[str]:
    """What converting ``source`` into ``target`` loses or has to make up, one sentence each (empty: nothing)."""
    src = capability(source, source_options)
    dst = capability(target, target_options)
    notes: list[str] = []
    if src.watermarks and not dst.watermarks:
        notes.append(f"{dst.protocol} carries no resolved ts with these options: every watermark is dropped "
                     "and a consumer can never know a point in time is complete (set enable-tidb-extension=true)")
    if not src.watermarks:
        synth = final_watermark is None or final_watermark
        notes.append(f"{src.protocol} carries no resolved ts with these options: the source is read to its end "
                     "before anything is released" + ("; one watermark at the last commit ts is added at the end"
                                                      if synth and dst.watermarks else ""))
    if src.exact_commit_ts and not dst.exact_commit_ts:
        notes.append(f"{dst.protocol} keeps only the physical milliseconds of commit ts: transactions committed in "
                     "one millisecond merge (set enable-tidb-extension=true)")
    if not src.exact_commit_ts and dst.exact_commit_ts:
        notes.append(f"{src.protocol} carried commit ts in milliseconds only: the target gets those truncated "
                     "values, not the original TSOs")
    if dst.schema_level > src.schema_level:
        made_up = "BOOTSTRAP messages and DDL schemas" if dst.protocol == "simple" else "column types"
        notes.append(f"{dst.protocol} carries more schema ({dst.schema}) than {src.protocol} ({src.schema}): "
                     f"its {made_up} are built from what the source has (no lengths, charsets, defaults "
                     "or secondary indexes unless the source carries them)")
    if dst.protocol == "simple" and src.protocol != "simple":
        notes.append("simple rows carry no schema: a BOOTSTRAP built from the source's schema is sent before the "
                     "first row of every table and after each schema change")
    if src.old_value and not dst.old_value:
        notes.append(f"{dst.protocol} UPDATE carries no pre-image with these options")
    if not src.old_value and dst.old_value:
        notes.append(f"{src.protocol} UPDATE had no pre-image: the target's UPDATE pre-image is missing too, and "
                     "an UPDATE that changed a key cannot be split into DELETE+INSERT")
    # The target's own notes, less what a sentence above already says (a loss is printed once).
    said = (("no resolved ts",) if src.watermarks and not dst.watermarks else ()) + (
        ("commit ts keeps only",) if src.exact_commit_ts and not dst.exact_commit_ts else ())
    for note in dst.notes:
        if note not in src.notes and "DELETE carries only" not in note and not note.startswith("rows carry no") \
                and not note.startswith(said):
            notes.append(f"{dst.protocol}: {note}")
    if "DELETE carries only the handle-key columns (delete-only-output-handle-key-columns)" in src.notes:
        notes.append(f"{src.protocol} DELETE carried only handle-key columns: so does the target's")
    return notes
