"""Spark's archive copies of an installed pyspark are taken off a Python worker's path, and nothing else is."""

from __future__ import annotations

import importlib
import os
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyticdc.spark import archives
from pyticdc.spark.archives import drop_installed_archives, installed_archives


def _zip(path: Path, names: list[str]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "")
    return str(path)


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, str]:
    """A pip-style site-packages with pyspark and py4j, pyspark's own archives, and archives elsewhere."""
    site = tmp_path / "site"
    for package in ("pyspark", "py4j"):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
    home = site / "pyspark"
    return {
        "site": str(site),
        "pyspark_zip": _zip(home / "python" / "lib" / "pyspark.zip", ["pyspark/__init__.py", "pyspark/sql/x.py"]),
        "py4j_zip": _zip(home / "python" / "lib" / "py4j-0.10.9.9-src.zip", ["py4j/__init__.py"]),
        "jar": _zip(home / "jars" / "spark-core_2.13-4.1.4.jar", ["org/apache/spark/A.class"]),
        # Inside the package too, but it holds a module nothing else provides: it must stay.
        "only_copy": _zip(home / "python" / "lib" / "extra.zip", ["extra_only/__init__.py"]),
        # A Spark distribution's archives, and a user's --py-files: never touched.
        "spark_home_zip": _zip(tmp_path / "spark-home" / "python" / "lib" / "pyspark.zip", ["pyspark/__init__.py"]),
        "py_files": _zip(tmp_path / "userFiles" / "deps.zip", ["pyspark/__init__.py"]),
    }


def test_only_the_installed_packages_own_copies_are_chosen(layout: dict[str, str]) -> None:
    path = [layout["pyspark_zip"], layout["py4j_zip"], layout["jar"], layout["only_copy"], layout["spark_home_zip"],
            layout["py_files"], layout["site"]]
    assert installed_archives(path) == [layout["pyspark_zip"], layout["py4j_zip"], layout["jar"]]


def test_nothing_is_chosen_without_an_installed_pyspark(layout: dict[str, str]) -> None:
    # pyspark only in the archives (a Spark distribution): they are where it comes from.
    assert installed_archives([layout["pyspark_zip"], layout["py4j_zip"], layout["jar"]]) == []
    assert installed_archives([layout["site"]]) == []


def test_an_unreadable_archive_stays(layout: dict[str, str]) -> None:
    broken = Path(layout["site"]) / "pyspark" / "python" / "lib" / "broken.zip"
    broken.write_bytes(b"not a zip")
    assert installed_archives([str(broken), layout["site"]]) == []


@pytest.fixture
def own_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "path_importer_cache", dict(sys.path_importer_cache))
    monkeypatch.setattr(sys, "path_hooks", list(sys.path_hooks))
    monkeypatch.setattr(archives, "_DROPPED", set())
    yield


@pytest.mark.usefixtures("own_path")
def test_dropping_removes_the_entries_and_their_importers(layout: dict[str, str]) -> None:
    keep = [layout["spark_home_zip"], layout["site"]]
    sys.path[:0] = [layout["pyspark_zip"], layout["jar"], *keep]
    inner = layout["pyspark_zip"] + os.sep + "pyspark"
    for entry in (layout["pyspark_zip"], inner, layout["jar"], layout["spark_home_zip"]):
        sys.path_importer_cache[entry] = None
    assert drop_installed_archives() == [layout["pyspark_zip"], layout["jar"]]
    assert sys.path[:2] == keep
    assert layout["pyspark_zip"] not in sys.path_importer_cache
    assert inner not in sys.path_importer_cache  # the importer of a package inside the archive too
    assert layout["jar"] not in sys.path_importer_cache
    assert layout["spark_home_zip"] in sys.path_importer_cache
    assert drop_installed_archives() == []  # idempotent


@pytest.mark.usefixtures("own_path")
def test_a_path_inside_a_dropped_archive_gets_an_importer_that_does_not_re_read_it(layout: dict[str, str]) -> None:
    from importlib.machinery import PathFinder

    sys.path[:0] = [layout["pyspark_zip"], layout["spark_home_zip"], layout["site"]]
    drop_installed_archives()
    # A package imported from the archive before the drop keeps its __path__ there: a later submodule import
    # asks for an importer of a path inside the archive.
    inner = layout["pyspark_zip"] + os.sep + "pyspark" + os.sep + "sql"
    spec = PathFinder.find_spec("x", [inner])
    assert spec is not None and spec.origin is not None and spec.origin.endswith("x.py")
    importer = sys.path_importer_cache[inner]
    assert type(importer).__name__ == "_StaticZipImporter"
    # Its listing stays as read: invalidate_caches() leaves it alone (a zipimporter would re-read the archive).
    files = getattr(importer, "_files", None)
    importlib.invalidate_caches()
    assert getattr(sys.path_importer_cache[inner], "_files", None) is files
    # An archive that was not dropped keeps the ordinary importer.
    other = layout["spark_home_zip"] + os.sep + "pyspark"
    PathFinder.find_spec("y", [other])
    assert type(sys.path_importer_cache[other]).__name__ == "zipimporter"


@pytest.mark.usefixtures("own_path")
def test_importing_the_spark_package_drops_them(layout: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path[:0] = [layout["pyspark_zip"], layout["site"]]
    for name in [n for n in sys.modules if n == "pyticdc.spark" or n.startswith("pyticdc.spark.")]:
        monkeypatch.delitem(sys.modules, name)
    importlib.import_module("pyticdc.spark")
    assert layout["pyspark_zip"] not in sys.path
    assert archives.installed_archives(sys.path) == []


@pytest.mark.spark
def test_a_spark_worker_imports_without_the_installed_archives(spark: Any) -> None:
    import pyspark

    if not os.path.isdir(os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")):
        pytest.skip("pyspark is not a pip install here: its archives are where it comes from")

    def worker_archives(batches: Iterator[Any]) -> Iterator[Any]:  # pickled by value: the worker cannot import tests
        import pyarrow as pa

        import pyticdc.spark  # noqa: F401 - what unpickling any of pyticdc's Spark functions does first

        importlib.import_module("pyspark.sql.worker.analyze_udtf")  # a package imported from pyspark.zip: a submodule

        entries = [e for e in sys.path if e.endswith((".zip", ".jar")) and "pyspark" in e]
        # Importers of paths inside the archives (packages imported from them before the drop) never re-read them.
        entries += [f"{e} {type(i).__name__}" for e, i in sys.path_importer_cache.items()
                    if ".zip" + os.sep in e and type(i).__name__ == "zipimporter"]
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"entry": entries}, schema=pa.schema([("entry", pa.string())]))

    left = spark.range(1).mapInArrow(worker_archives, "entry string").collect()
    assert [row.entry for row in left] == []
