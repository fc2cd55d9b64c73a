"""The net change per handle of one table's changes, in Arrow (pure): what the delta-rs engine MERGEs.

The same fold as ``pyticdc.spark.apply.delta_spark.net_change_frame`` does in Spark (the ``delta-spark``
engine's, and the reference a test holds this one to): each change is a delete of its pre-image's handle and an
upsert of its post-image's; per handle the last action in apply order (commit ts, operation rank, delete before
upsert, staged before new, offset, event index) wins and carries its record (the ``_source_*`` columns); fresh
and stale count the primary actions above and at or below the table's position (``held``), net the upserts minus
the deletes above it. Spark's form is a sort-based aggregate over every action with its image; this one runs in
the task that applies the table, on the rows it reads anyway.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NET_INPUT", "NET_SCHEMA", "net_change"]

#: The change-row columns the fold reads.
NET_INPUT: Final = ("tkey", "ts", "rank", "row_id", "marks", "hko", "staged", "topic", "partition", "offset", "idx",
                    "held", "op", "pre", "post", "pre_h", "post_h")
_WINNER: Final = ("act", "ts", "row_id", "img", "marks", "hko", "op", "src_topic", "src_partition", "src_offset")
#: One row per handle (the order of Spark's form, which has ``tkey`` first).
NET_SCHEMA: Final = ("tkey", *_WINNER, "fresh", "stale", "net")


def _actions(rows: pa.Table, act: str) -> pa.Table:
    # The narrow columns of one kind of action (what the order, the grouping and the counts read); ``row`` is
    # the change's position in ``rows``, where the winners' images and the other wide columns are taken from.
    deleting = act == "delete"
    op = rows["op"]
    keep = (pc.and_(pc.or_(pc.equal(op, "delete"), pc.equal(op, "update")), pc.is_valid(rows["pre"])) if deleting
            else pc.and_(pc.not_equal(op, "delete"), pc.is_valid(rows["post"])))
    at = pc.indices_nonzero(keep)
    part = rows.select(["tkey", "pre_h" if deleting else "post_h", "op", "ts", "rank", "staged", "offset", "idx",
                        "held"]).take(at)
    n = part.num_rows
    primary = (pc.cast(pc.equal(part["op"], "delete"), pa.int64()) if deleting
               else pa.repeat(pa.scalar(1, pa.int64()), n))
    return pa.table({
        "tkey": part["tkey"], "h": part["pre_h" if deleting else "post_h"], "row": at,
        "sub": pa.repeat(pa.scalar(0 if deleting else 1, pa.int32()), n), "primary": primary,
        "delta": pa.repeat(pa.scalar(-1 if deleting else 1, pa.int64()), n), "ts": part["ts"], "rank": part["rank"],
        "new": pc.cast(pc.invert(part["staged"]), pa.int32()), "src_offset": part["offset"], "idx": part["idx"],
        "held": part["held"]})


def net_change(rows: pa.Table) -> pa.Table:
    """One row per (table, handle) of ``rows`` (:data:`NET_INPUT` columns): the winning action and the counts."""
    # The order and the grouping move only narrow columns: the images are taken once, for the winners.
    table = pa.concat_tables([_actions(rows, "delete"), _actions(rows, "upsert")])
    fresh = pc.greater(pc.multiply(table["ts"], 2), table["held"])
    zero = pa.scalar(0, pa.int64())
    table = (table.append_column("fp", pc.if_else(fresh, table["primary"], zero))
             .append_column("sp", pc.if_else(fresh, zero, table["primary"]))
             .append_column("nd", pc.if_else(fresh, table["delta"], zero)))
    ordered = table.sort_by([(name, "ascending") for name in ("ts", "rank", "sub", "new", "src_offset", "idx")])
    ordered = ordered.append_column("i", pa.array(range(ordered.num_rows), pa.int64()))
    # use_threads=False: the groups in order of their first row, so the output is the same on every run.
    groups = ordered.group_by(["tkey", "h"], use_threads=False).aggregate(
        [("i", "max"), ("fp", "sum"), ("sp", "sum"), ("nd", "sum")])
    winners = ordered.take(groups["i_max"])
    deleting = pc.equal(winners["sub"], 0)
    source = rows.select(["row_id", "marks", "hko", "op", "topic", "partition", "pre", "post"]).take(winners["row"])
    return pa.table({
        "tkey": winners["tkey"], "act": pc.if_else(deleting, "delete", "upsert"), "ts": winners["ts"],
        "row_id": source["row_id"], "img": pc.if_else(deleting, source["pre"], source["post"]),
        "marks": source["marks"], "hko": source["hko"], "op": source["op"], "src_topic": source["topic"],
        "src_partition": source["partition"], "src_offset": winners["src_offset"],
        "fresh": groups["fp_sum"], "stale": groups["sp_sum"], "net": groups["nd_sum"]})
