"""The package layers of docs/architecture.md, enforced: no upward import, codecs self-contained, small files."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

SRC: Final = Path(__file__).resolve().parents[1] / "src"
PACKAGE: Final = SRC / "pyticdc"

#: Bottom to top: a module may import from its own layer and the layers below it (docs/architecture.md).
LAYERS: Final = (
    "pyticdc.errors",
    "pyticdc.model",
    "pyticdc.mysql",
    "pyticdc.codec",
    "pyticdc.routing",
    "pyticdc.consumer",
    "pyticdc.sim",
    "pyticdc.io",
    "pyticdc.arrow",
    "pyticdc.replica",
    "pyticdc.inspect",
    "pyticdc.vectors",
    "pyticdc.spark",
    "pyticdc.cli",
)
#: The package facade and ``python -m pyticdc`` sit outside the layers (they only re-export or start the CLI).
EXEMPT: Final = frozenset({"pyticdc", "pyticdc.__main__"})
#: The only packages a codec may import from the rest of pyticdc.
CODEC_MAY_IMPORT: Final = ("pyticdc.codec", "pyticdc.model", "pyticdc.errors", "pyticdc.mysql")
#: The importable root re-exports the codecs, model and errors: importing it is importing the codec layer.
ROOT_LAYER: Final = "pyticdc.codec"
MAX_LINES: Final = 900
MAX_TOP_LEVEL_MODULES: Final = 6


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> int | None:
    """Index in LAYERS of the layer ``module`` belongs to; None when no layer holds it."""
    if module == "pyticdc":
        return LAYERS.index(ROOT_LAYER)
    for index, package in enumerate(LAYERS):
        if _within(module, package):
            return index
    return None


def module_sources(root: Path = PACKAGE) -> dict[str, tuple[str, bool]]:
    """Dotted module name → (source text, is a package ``__init__``) for every module under ``root``."""
    out: dict[str, tuple[str, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        out[name] = (path.read_text(encoding="utf-8"), is_package)
    return out


def imported_modules(name: str, source: str, is_package: bool, known: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(line, pyticdc module) of every import in ``source``, at any depth (functions, TYPE_CHECKING blocks)."""
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _within(alias.name, "pyticdc"):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if not _within(target, "pyticdc"):
                continue
            for alias in node.names:
                # ``from pyticdc.io import kafka`` imports the module pyticdc.io.kafka.
                sub = f"{target}.{alias.name}"
                yield node.lineno, sub if sub in known else target


def violations(modules: Mapping[str, tuple[str, bool]]) -> list[str]:
    """Every layering rule ``modules`` break, one line each (empty: none)."""
    known = frozenset(modules)
    found: list[str] = []
    for name, (source, is_package) in sorted(modules.items()):
        if name in EXEMPT:
            continue
        own = layer_of(name)
        if own is None:
            found.append(f"{name}: in no layer (add its package to LAYERS and docs/architecture.md)")
            continue
        for line, target in sorted(imported_modules(name, source, is_package, known)):
            if _within(name, "pyticdc.codec") and not any(_within(target, p) for p in CODEC_MAY_IMPORT):
                found.append(f"{name}:{line}: a codec imports {target}")
                continue
            other = layer_of(target)
            if other is None:
                found.append(f"{name}:{line}: imports {target}, which is in no layer")
            elif other > own:
                found.append(f"{name}:{line}: imports {target} ({LAYERS[other]} is above {LAYERS[own]})")
    return found


# --------------------------------------------------------------------------- the package as it is
def test_no_module_imports_from_a_layer_above_its_own() -> None:
    modules = module_sources()
    assert len(modules) > 50  # the scan found the package
    problems = violations(modules)
    assert not problems, "\n".join(problems)


def test_no_source_file_exceeds_the_line_limit() -> None:
    long = {str(p.relative_to(SRC)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"


def test_few_modules_at_the_top_of_the_package() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_every_package_is_in_a_layer() -> None:
    packages = {f"pyticdc.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(LAYERS), sorted(packages - set(LAYERS))


# --------------------------------------------------------------------------- the checker itself
def _synthetic(**sources: str) -> dict[str, tuple[str, bool]]:
    """A module set: keyword ``pyticdc__routing__fake`` is the module ``pyticdc.routing.fake``."""
    return {name.replace("__", "."): (text, False) for name, text in sources.items()}


def test_checker_reports_an_upward_import_and_only_that() -> None:
    modules = _synthetic(
        pyticdc__routing__fake="from pyticdc.model import RowChange\nfrom pyticdc.spark.writer import WriterOptions\n",
    )
    assert violations(modules) == [
        "pyticdc.routing.fake:2: imports pyticdc.spark.writer (pyticdc.spark is above pyticdc.routing)"]


def test_checker_sees_imports_in_functions_type_checking_blocks_and_relative_ones() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pyticdc.replica.store import DeltaStore\n"
        "def f() -> None:\n"
        "    import pyticdc.cli.common\n"
        "from ..inspect import summary\n"
        "from . import engine\n"
    )
    modules = {"pyticdc.consumer.fake": (source, False), "pyticdc.inspect.summary": ("", False)}
    assert violations(modules) == [
        "pyticdc.consumer.fake:3: imports pyticdc.replica.store (pyticdc.replica is above pyticdc.consumer)",
        "pyticdc.consumer.fake:5: imports pyticdc.cli.common (pyticdc.cli is above pyticdc.consumer)",
        "pyticdc.consumer.fake:6: imports pyticdc.inspect.summary (pyticdc.inspect is above pyticdc.consumer)",
    ]


def test_checker_holds_codecs_to_codec_model_errors_and_mysql() -> None:
    modules = _synthetic(
        pyticdc__codec__fake=("from pyticdc.mysql import STRING_TYPES\nfrom pyticdc.errors import DecodeError\n"
                              "from pyticdc.routing import Router\nimport pyticdc\n"),
    )
    assert violations(modules) == [
        "pyticdc.codec.fake:3: a codec imports pyticdc.routing",
        "pyticdc.codec.fake:4: a codec imports pyticdc",
    ]


def test_checker_reports_a_module_in_no_layer() -> None:
    modules = _synthetic(pyticdc__newthing__core="from pyticdc.model import Event\n",
                         pyticdc__cli__fake="from pyticdc.newthing.core import x\n")
    assert violations(modules) == [
        "pyticdc.cli.fake:1: imports pyticdc.newthing.core, which is in no layer",
        "pyticdc.newthing.core: in no layer (add its package to LAYERS and docs/architecture.md)",
    ]


def test_layers_match_the_architecture_document() -> None:
    text = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    positions = [text.find(f"`{package}`") for package in LAYERS]
    assert all(p >= 0 for p in positions), [p for p, at in zip(LAYERS, positions) if at < 0]
