"""Codec options, named and validated exactly as TiCDC names them.

Options can be given with TiCDC's spelling (``enable-tidb-extension``), as Python keywords
(``enable_tidb_extension``), or as sink-URI strings (``"true"``, ``"1048576"``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from pyticdc.errors import ConfigError

__all__ = ["OPTION_DEFAULTS", "OPTION_DOCS", "CodecOptions", "default_table", "parse_options", "system_clock_ms"]


def system_clock_ms() -> int:
    """Wall-clock milliseconds (TiCDC's ``time.Now().UnixMilli()``)."""
    return time.time_ns() // 1_000_000


class CodecOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Every codec option TiCDC knows, resolved; the field doc names the TiCDC option."""

    #: ``max-message-bytes``: largest Kafka message (key + value + 36 overhead).
    max_message_bytes: int = 10485760
    #: ``max-batch-size``: most rows in one Open/Craft message.
    max_batch_size: int = 16
    #: ``enable-tidb-extension``: Canal-JSON ``_tidb``, watermarks; Debezium ``tidb_type``, op ``m``.
    enable_tidb_extension: bool = False
    #: ``only-output-updated-columns``: drop unchanged columns from the pre-image.
    only_output_updated_columns: bool = False
    #: ``content-compatible``: Canal-JSON full ``mysqlType`` (implies only-output-updated-columns).
    content_compatible: bool = False
    #: ``delete-only-output-handle-key-columns``: DELETE carries handle-key columns only.
    delete_only_output_handle_key_columns: bool = False
    #: ``open-protocol.output-old-value``: Open UPDATE carries ``p``.
    open_output_old_value: bool = True
    #: ``debezium-output-old-value``: Debezium UPDATE carries ``before``.
    debezium_output_old_value: bool = True
    #: ``debezium-disable-schema``: Debezium omits ``schema``.
    debezium_disable_schema: bool = False
    #: ``large-message-handle-option``: none | handle-key-only | claim-check.
    large_message_handle_option: str = "none"
    #: ``large-message-handle-compression``: none | snappy | lz4.
    large_message_handle_compression: str = "none"
    #: ``claim-check-storage-uri``: where claim-check stores full messages (``file:///dir``).
    claim_check_storage_uri: str = ""
    #: ``claim-check-raw-value``: store the raw value instead of the JSON envelope.
    claim_check_raw_value: bool = False
    #: ``encoding-format``: Simple json | avro.
    encoding_format: str = "json"
    #: ``time-zone``: the changefeed/server time zone TIMESTAMP values are printed in.
    time_zone: str = "UTC"
    #: ``cluster-id``: TiCDC cluster id (Debezium names).
    cluster_id: str = "default"
    #: ``send-bootstrap-interval-in-sec``: Simple BOOTSTRAP period.
    send_bootstrap_interval_in_sec: int = 120
    #: ``send-bootstrap-in-msg-count``: Simple BOOTSTRAP every N rows.
    send_bootstrap_in_msg_count: int = 10000
    #: ``send-bootstrap-to-all-partition``: Simple BOOTSTRAP to all partitions or partition 0.
    send_bootstrap_to_all_partition: bool = True
    #: ``default-table`` (pyticdc's own, decoders only): ``schema.table`` of rows whose message names no
    #: table (Debezium's ExtractNewRecordState without ``__table``, Flink's encoders); "" makes them errors.
    default_table: str = ""


_FIELDS: Final = {name: name.replace("_", "-") for name in CodecOptions.__struct_fields__}
#: TiCDC option name → CodecOptions field.
TICDC_NAMES: Final[dict[str, str]] = {
    **{dash: field for field, dash in _FIELDS.items()},
    "open-protocol.output-old-value": "open_output_old_value",
}
del TICDC_NAMES["open-output-old-value"]
#: CodecOptions field → TiCDC option name.
FIELD_TO_TICDC: Final[dict[str, str]] = {field: name for name, field in TICDC_NAMES.items()}

OPTION_DEFAULTS: Final[dict[str, Any]] = {
    FIELD_TO_TICDC[f]: getattr(CodecOptions(), f) for f in CodecOptions.__struct_fields__
}
#: Allowed values of enumerated options.
CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "large_message_handle_option": ("none", "handle-key-only", "claim-check"),
    "large_message_handle_compression": ("none", "snappy", "lz4"),
    "encoding_format": ("json", "avro"),
}
OPTION_DOCS: Final[dict[str, str]] = {
    "max-message-bytes": "largest Kafka message in bytes, key + value + 36 (default 10485760)",
    "max-batch-size": "most rows batched into one Open/Craft message (default 16)",
    "enable-tidb-extension": "TiDB extension fields and watermark messages (Canal-JSON, Debezium)",
    "only-output-updated-columns": "pre-image keeps only the columns that changed",
    "content-compatible": "Canal-JSON mysqlType with full type text; implies only-output-updated-columns",
    "delete-only-output-handle-key-columns": "DELETE carries only the handle-key columns",
    "open-protocol.output-old-value": "Open Protocol UPDATE carries the pre-image 'p' (default true)",
    "debezium-output-old-value": "Debezium UPDATE carries 'before' (default true)",
    "debezium-disable-schema": "Debezium messages omit the 'schema' part",
    "large-message-handle-option": "none | handle-key-only | claim-check for messages over max-message-bytes",
    "large-message-handle-compression": "none | snappy | lz4 compression of large-message values",
    "claim-check-storage-uri": "where claim-check stores full messages, e.g. file:///tmp/claims",
    "claim-check-raw-value": "store the raw value rather than the {key,value} JSON envelope",
    "encoding-format": "Simple protocol encoding: json | avro",
    "time-zone": "server time zone TIMESTAMP values are expressed in (default UTC)",
    "cluster-id": "TiCDC cluster id used in Debezium names (default 'default')",
    "send-bootstrap-interval-in-sec":
        "Simple: BOOTSTRAP at least this often per table (default 120; 0 with count 0 disables)",
    "send-bootstrap-in-msg-count": "Simple: BOOTSTRAP every N rows per table (default 10000)",
    "send-bootstrap-to-all-partition": "Simple: BOOTSTRAP to every partition (true) or partition 0",
    "default-table": "decoders: SCHEMA.TABLE of rows whose messages name no table (else they are errors)",
}


def _field_name(name: str) -> str | None:
    if name in TICDC_NAMES:
        return TICDC_NAMES[name]
    if name in CodecOptions.__struct_fields__:
        return name
    dashed = name.replace("_", "-")
    return TICDC_NAMES.get(dashed)


def _coerce(field: str, value: Any, ticdc_name: str) -> Any:
    default = getattr(CodecOptions(), field)
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"option {ticdc_name!r}: expected true or false, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, bool):
            raise ConfigError(f"option {ticdc_name!r}: expected an integer, got {value!r}")
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"option {ticdc_name!r}: expected an integer, got {value!r}") from None
        minimum = 1 if field in ("max_message_bytes", "max_batch_size") else 0
        if number < minimum:
            raise ConfigError(f"option {ticdc_name!r}: must be >= {minimum}, got {number}")
        return number
    if not isinstance(value, str):
        raise ConfigError(f"option {ticdc_name!r}: expected a string, got {value!r}")
    choices = CHOICES.get(field)
    if choices is not None and value not in choices:
        raise ConfigError(
            f"option {ticdc_name!r}: invalid value {value!r}; valid values: {', '.join(choices)}"
        )
    if field == "default_table" and value and (value.startswith(".") or value.endswith(".")):
        raise ConfigError(f"option {ticdc_name!r}: expected SCHEMA.TABLE or TABLE, got {value!r}")
    if field == "time_zone":
        from pyticdc.codec.timezone import load_zone

        load_zone(value)  # raises ConfigError for an unknown zone
    return value


def parse_options(
    protocol: str,
    accepted: frozenset[str],
    options: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> CodecOptions:
    """Resolve options for ``protocol``; unknown or inapplicable names raise ConfigError."""
    merged: dict[str, Any] = {}
    for name, value in {**(options or {}), **kwargs}.items():
        field = _field_name(name)
        valid = ", ".join(sorted(FIELD_TO_TICDC[f] for f in accepted))
        if field is None:
            raise ConfigError(f"{protocol}: unknown option {name!r}; valid options: {valid}")
        if field not in accepted:
            raise ConfigError(f"{protocol}: option {name!r} does not apply; valid options: {valid}")
        merged[field] = _coerce(field, value, FIELD_TO_TICDC[field])
    return CodecOptions(**merged)


def default_table(options: CodecOptions) -> tuple[str, str] | None:
    """``default-table`` as (schema, table): the text before the first dot is the schema; None if unset."""
    if not options.default_table:
        return None
    schema, dot, table = options.default_table.partition(".")
    return (schema, table) if dot else ("", schema)


Clock = Callable[[], int]
