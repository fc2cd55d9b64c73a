"""What a pyticdc task does first in a Spark Python worker: keep the worker's long-lived objects out of the collector.

A reused Spark Python worker runs ``gc.collect()`` after every task (pyspark's daemon, when
``SPARK_REUSE_WORKER`` is set). A full collection walks every object alive in the process: the modules
of pyspark, pyarrow, pandas, deltalake and pyticdc, about 80,000 objects once an apply has run. Measured
here that was 15-60 ms per task, a tenth of a worker's CPU over a replication.

:func:`prepare_task` runs at the start of pyticdc's task bodies, when the previous task's objects are gone
and what is alive is what lives as long as the worker. It moves those objects to the collector's permanent
generation (``gc.freeze``), so the collection after the task walks only what the task made. A cycle
frozen while alive would never be collected: every :data:`THAW_EVERY`-th task thaws them instead, and that
task's collection walks (and frees) everything, as before. Outside a reused worker it does nothing.
"""

from __future__ import annotations

import gc
import os
from typing import Final

__all__ = ["THAW_EVERY", "prepare_task"]

#: Every this many tasks the frozen objects are thawed, so the collection after that task frees dead cycles.
THAW_EVERY: Final = 64

_tasks = 0


def prepare_task() -> None:
    """Freeze the worker's long-lived objects before a task (in a reused Spark Python worker only)."""
    global _tasks
    if not os.environ.get("SPARK_REUSE_WORKER"):
        return
    _tasks += 1
    if _tasks % THAW_EVERY == 0:
        gc.unfreeze()
    else:
        gc.freeze()
