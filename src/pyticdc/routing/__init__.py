"""Routing: partition dispatch, topic expressions, update splitting, the MQ producer and claim-check storage."""

from __future__ import annotations

from pyticdc.routing.claimcheck import FileClaimCheckStore, claim_check_file_name, claim_check_store
from pyticdc.routing.dispatch import (
    PARTITION_RULES,
    ColumnsDispatcher,
    DispatchRule,
    EventRouter,
    IndexValueDispatcher,
    PartitionDispatcher,
    PositionInertia,
    TableDispatcher,
    TsDispatcher,
    column_value_bytes,
    column_value_string,
    make_partition_dispatcher,
    normalize_rule,
    rules_from_toml,
)
from pyticdc.routing.producer import (
    BATCH_PROTOCOLS,
    DEFAULT_PARTITION_NUM,
    FLUSH_BATCH_SIZE,
    PARTITION_ZERO_DDL_PROTOCOLS,
    BootstrapSchedule,
    Router,
    route_events,
)
from pyticdc.routing.split import dml_order, should_split_update, split_update, split_updates
from pyticdc.routing.tablefilter import TableFilter, parse_table_filter
from pyticdc.routing.topic import (
    KAFKA_TOPIC_NAME_MAX_LENGTH,
    TopicDispatcher,
    is_static_topic,
    make_topic_dispatcher,
    sanitize_topic_part,
    substitute_topic,
    validate_topic_expression,
)

__all__ = [
    "BATCH_PROTOCOLS",
    "DEFAULT_PARTITION_NUM",
    "FLUSH_BATCH_SIZE",
    "KAFKA_TOPIC_NAME_MAX_LENGTH",
    "PARTITION_RULES",
    "PARTITION_ZERO_DDL_PROTOCOLS",
    "BootstrapSchedule",
    "ColumnsDispatcher",
    "DispatchRule",
    "EventRouter",
    "FileClaimCheckStore",
    "IndexValueDispatcher",
    "PartitionDispatcher",
    "PositionInertia",
    "Router",
    "TableDispatcher",
    "TableFilter",
    "TopicDispatcher",
    "TsDispatcher",
    "claim_check_file_name",
    "claim_check_store",
    "column_value_bytes",
    "column_value_string",
    "dml_order",
    "is_static_topic",
    "make_partition_dispatcher",
    "make_topic_dispatcher",
    "normalize_rule",
    "parse_table_filter",
    "route_events",
    "rules_from_toml",
    "sanitize_topic_part",
    "should_split_update",
    "split_update",
    "split_updates",
    "substitute_topic",
    "validate_topic_expression",
]
