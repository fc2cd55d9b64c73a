"""Distributed apply: decode, de-duplication, net change and MERGE in Spark executors (see ``batch``)."""

from __future__ import annotations

from pyticdc.spark.apply.batch import DistributedReplicator, supports

__all__ = ["DistributedReplicator", "supports"]
