"""Spark's archive copies of an installed pyspark, taken off a Python worker's import path.

Spark puts ``pyspark.zip``, the py4j zip and spark-core's jar at the head of every Python worker's
``sys.path``. Before each Python task, and each planner call of a Python data source
(``create_data_source``, ``plan_data_source_read``), pyspark runs ``importlib.invalidate_caches()``, which
re-reads the directory of every archive any import went through: the jar alone lists 5,000 entries.
Measured here that was about 80 ms of CPU per call, a quarter of a second per query of the ``pyticdc``
source before a record was read, and as much again per task.

When pyspark is installed as a package (pip), those archives sit inside the installed package and hold
the same code as the package. :func:`drop_installed_archives` removes them from ``sys.path`` and forgets
their importers; modules already imported from them stay as they are. Archives anywhere else (a Spark
distribution's ``SPARK_HOME``, files shipped with ``--py-files``) are left alone, and so is an archive
holding a top-level module that is not importable without it. Importing :mod:`pyticdc.spark` calls it,
which is how it runs in Spark's workers: they import the package to unpickle pyticdc's functions. In any
other process nothing matches and nothing changes.
"""

from __future__ import annotations

import os
import sys
import zipfile
import zipimport
from collections.abc import Sequence

__all__ = ["drop_installed_archives", "installed_archives"]

_ARCHIVES = (".zip", ".jar")


def _module_location(name: str, path: Sequence[str]) -> str | None:
    """Where top-level module ``name`` is importable from outside any archive on ``path`` (first wins, as for
    ``import``): its package directory or its file; None when only an archive has it."""
    for entry in path:
        if entry.endswith(_ARCHIVES):
            continue
        base = os.path.join(entry or os.curdir, name)
        if os.path.isfile(os.path.join(base, "__init__.py")):
            return base
        if os.path.isfile(base + ".py"):
            return base + ".py"
    return None


def _top_level_modules(archive: str) -> set[str] | None:
    """The top-level Python modules and packages in ``archive``; None when it cannot be read."""
    try:
        with zipfile.ZipFile(archive) as opened:
            names = opened.namelist()
    except (OSError, zipfile.BadZipFile):
        return None
    return {name.split("/", 1)[0].removesuffix(".py") for name in names if name.endswith(".py")}


def installed_archives(path: Sequence[str]) -> list[str]:
    """The archives on ``path`` inside an installed pyspark package whose every module is importable without them."""
    package = _module_location("pyspark", path)
    if package is None or not os.path.isdir(package):
        return []
    home = os.path.realpath(package) + os.sep
    out = []
    for entry in path:
        if not entry.endswith(_ARCHIVES) or not os.path.realpath(entry).startswith(home):
            continue
        modules = _top_level_modules(entry)
        if modules is not None and all(_module_location(m, path) is not None for m in modules):
            out.append(entry)
    return out


class _StaticZipImporter(zipimport.zipimporter):
    """A zip importer that does not re-read its archive on ``invalidate_caches`` (the archive never changes)."""

    def invalidate_caches(self) -> None:
        """Nothing to re-read: an installed package's archive does not change while the worker runs."""


#: The dropped archives, whose inner paths get static importers (see :func:`_static_hook`).
_DROPPED: set[str] = set()


def _static_hook(path: str) -> zipimport.zipimporter:
    """``sys.path_hooks`` entry: a static importer for a path inside a dropped archive, else not ours."""
    for archive in _DROPPED:
        if path.startswith(archive + os.sep):
            return _StaticZipImporter(path)
    raise ImportError(path)


def drop_installed_archives() -> list[str]:
    """Take :func:`installed_archives` off ``sys.path`` and out of the importer cache; returns them.

    Packages already imported from them keep their ``__path__`` inside the archive, so a submodule imported later
    creates an importer for a path inside it; those importers come from :func:`_static_hook` and are not
    re-read by ``invalidate_caches``.
    """
    if not any(entry.endswith(_ARCHIVES) for entry in sys.path):
        return []
    dropped = installed_archives(sys.path)
    for archive in dropped:
        sys.path.remove(archive)
        _DROPPED.add(archive)
        inside = archive + os.sep
        for key in [k for k in sys.path_importer_cache if k == archive or k.startswith(inside)]:
            del sys.path_importer_cache[key]
    if dropped and _static_hook not in sys.path_hooks:
        sys.path_hooks.insert(0, _static_hook)
    return dropped
