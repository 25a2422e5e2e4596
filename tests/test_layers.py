"""Imports only go downward between layers; `metadata` and `codecs` stay free of I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "aiozarr"

# Each layer may import itself and the layers listed after it.
LAYERS = [
    # the package's namespace re-exports every layer (dask's functions on first use);
    # `aiozarr.zarr` (zarr-python's store and codec pipeline) is imported by no layer
    {"__main__", "__init__", "cli", "xarray", "dask", "zarr"},
    {"api", "tools"},
    {"sync"},
    {"nodes"},
    {"engine"},
    {"codecs", "metadata", "selection"},
    {"storage", "testing", "emulator"},
    {"byte_cache", "byte_range", "config", "errors", "sizes"},
]
# Folders whose modules are layered among themselves, in the same way.
INNER_LAYERS = {
    "nodes": [
        {"display"},
        {"array", "group", "description"},
        {"node_updates"},
        {"hierarchy", "hierarchy_walk", "creation"},
        {"codec_roles", "selections", "shape_changes", "stored_size", "write_values"},
    ],
    # The store protocol stands on the request policy; backends implement the protocol;
    # URLs open backends; references open their targets by URL.
    "storage": [
        {"references"},
        {"opening"},
        {"backends"},
        {"protocol"},
        {"policy"},
    ],
}
# Beyond the order above: these may not import these, whatever their rank.
FORBIDDEN = {
    "metadata": {"storage", "engine", "codecs"},
    "codecs": {"storage", "engine"},
    "selection": {"storage", "engine", "codecs", "metadata"},
}


def _rank(name: str, layers: list[set[str]], where: str) -> int:
    for rank, names in enumerate(layers):
        if name in names:
            return rank
    raise AssertionError(f"module {where}{name} is in no layer: add it to the layers")


def _layer_of(module: str) -> int:
    return _rank(module, LAYERS, "aiozarr.")


def _parts(name: str) -> list[str] | None:
    """`aiozarr.a.b.c` -> `["a", "b", "c"]` (`aiozarr` alone: `["__init__"]`)."""
    parts = name.split(".")
    if parts[0] != "aiozarr":
        return None
    return parts[1:] or ["__init__"]


def _imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "aiozarr" or node.module in INNER_PACKAGES:
                found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
            else:
                found.append((node.module, node.lineno))
    return found


INNER_PACKAGES = {f"aiozarr.{folder}" for folder in INNER_LAYERS}


def _own(path: Path) -> list[str]:
    return [part.removesuffix(".py") for part in path.relative_to(SRC).parts]


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_imports_only_go_down(path: Path) -> None:
    own = _own(path)
    if own[0] == "testing":  # the test helpers may use the whole library
        return
    rank = _layer_of(own[0])
    for name, line in _imports(path):
        target = _parts(name)
        if target is None:
            continue
        where = f"{path.relative_to(SRC)}:{line} imports {name}"
        if target[0] == own[0]:
            inner = INNER_LAYERS.get(own[0])
            if inner and len(own) > 1 and len(target) > 1 and own[1] != "__init__":
                mine, theirs = (
                    _rank(own[1], inner, f"aiozarr.{own[0]}."),
                    _rank(target[1], inner, f"aiozarr.{own[0]}."),
                )
                assert theirs >= mine, f"{where}, a layer above it in aiozarr.{own[0]}"
            continue
        assert target[0] not in FORBIDDEN.get(own[0], set()), where
        assert _layer_of(target[0]) >= rank, f"{where}, a layer above aiozarr.{own[0]}"


MODULES = sorted(
    ".".join(("aiozarr", *p.relative_to(SRC).with_suffix("").parts)).removesuffix(".__init__")
    for p in SRC.rglob("*.py")
    if p.name != "__main__.py"
)


@pytest.mark.parametrize("name", MODULES)
def test_every_module_imports_by_its_name(name: str) -> None:
    """`import aiozarr.x` gives the module x: no function or class of a package has the
    name of one of its modules (the function `copy` hid the module `copy`)."""
    import importlib
    import sys
    import types

    module = importlib.import_module(name)
    assert isinstance(module, types.ModuleType) and sys.modules[name] is module
    parent, _, child = name.rpartition(".")
    if parent:
        shadow = getattr(importlib.import_module(parent), child)
        assert shadow is module, f"{parent}.{child} is {shadow!r}, not the module {name}"


def test_the_codec_chain_does_not_import_the_sharding_codec() -> None:
    """Sharding is a capability the chain asks its array->bytes codec for (`shards`,
    `shard_layout`); the chain knows no codec by class, so no import cycle hides in it."""
    tree = ast.parse((SRC / "codecs" / "chain.py").read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and id(node) not in typing_only:
            assert node.module != "aiozarr.codecs.sharding", f"chain.py:{node.lineno}"


# The engine reaches storage through the store protocol and the request policy's entry
# points (`RequestShape`, `HeldBytes`), never a backend or the policy's inner modules:
# how requests are shaped is the policy's to decide (CONTRIBUTING, "Request size").
ENGINE_STORAGE_DOORS = {"aiozarr.storage.protocol", "aiozarr.storage.policy"}


def _storage_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [
            f"{node.lineno}: {name}"
            for name in names
            if name.startswith("aiozarr.storage") and name not in ENGINE_STORAGE_DOORS
        ]
    return found


@pytest.mark.parametrize(
    "path", sorted((SRC / "engine").rglob("*.py")), ids=lambda p: str(p.relative_to(SRC))
)
def test_the_engine_enters_storage_by_the_protocol_and_the_policy(path: Path) -> None:
    assert not _storage_imports(path), f"{path.relative_to(SRC)}: {_storage_imports(path)}"


def test_the_storage_door_check_catches_a_backend_and_an_inner_module(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from aiozarr.storage.protocol import Store\n"
        "from aiozarr.storage.policy import RequestShape\n"
        "from aiozarr.storage.backends.local import LocalStore\n"
        "import aiozarr.storage.policy.ranges\n"
    )
    assert [found.split(":")[0] for found in _storage_imports(source)] == ["3", "4"]


# The engine's view of an array (`AsyncArray.stored`, a `StoredArray`) belongs to nodes/array.py
# and the engine: the layers above ask AsyncArray's documented properties (`is_sharded`,
# `rectilinear_grid`, `chunk_key`, ...), so a change inside the engine cannot break them.
ENGINE_SIDE = ("nodes/array.py", "engine")
ENGINE_ATTRIBUTES = {"stored", "_stored"}
# Private or engine-internal calls that upper layers reach through a public door instead:
# `aiozarr.sync.run` (the portal) and `aiozarr.engine.transfer.move_chunks` (stored chunks).
PRIVATE_IMPORTS = {("aiozarr.sync", "_run"), ("aiozarr.engine.executor", "run_codec")}
PRIVATE_ATTRIBUTES = {"_run", "run_codec"}


def _reach_ins(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in ENGINE_ATTRIBUTES | PRIVATE_ATTRIBUTES:
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if (node.module, alias.name) in PRIVATE_IMPORTS:
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if tuple(alias.name.rsplit(".", 1)) in PRIVATE_IMPORTS:
                    found.append(f"{node.lineno}: import {alias.name}")
    return found


ABOVE_THE_ARRAY = [
    p for p in sorted(SRC.rglob("*.py")) if not str(p.relative_to(SRC)).startswith(ENGINE_SIDE)
]


@pytest.mark.parametrize("path", ABOVE_THE_ARRAY, ids=lambda p: str(p.relative_to(SRC)))
def test_no_reach_past_the_array(path: Path) -> None:
    """Modules outside array.py and engine/ use neither the engine's `StoredArray` nor
    private calls of the portal and the codec pool."""
    assert not _reach_ins(path), f"{path.relative_to(SRC)} reaches past the array: " + ", ".join(
        _reach_ins(path)
    )


def test_the_reach_in_check_catches_each_kind(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from aiozarr.sync import _run\n"
        "from aiozarr.engine.executor import run_codec\n"
        "import aiozarr.sync\n"
        "a.stored.layout\n"
        "b._stored\n"
        "aiozarr.sync._run(f)\n"
    )
    assert len(_reach_ins(source)) == 5


# -- import cycles ---------------------------------------------------------------------------


def _module_graph() -> dict[str, set[str]]:
    """Module -> the aiozarr modules it imports anywhere: at the top, inside functions and
    under TYPE_CHECKING alike (`from package import module` names the module)."""
    paths = {name: SRC.joinpath(*name.split(".")[1:]) for name in MODULES}
    known = set(MODULES)

    def resolve(name: str) -> str:
        while name not in known:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {}
    for name, base in paths.items():
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names if a.name.startswith("aiozarr")}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("aiozarr"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in known else resolve(node.module or ""))
        graph[name] = targets - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = {v}
            while (w := stack.pop()) != v:
                members.add(w)
            if len(members) > 1:
                found.append(members)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    """No module imports, even lazily or for types only, a module that imports it back
    (the metadata model's lazy import of v2 / v3 was one)."""
    assert [sorted(c) for c in _cycles(_module_graph())] == []


def test_the_cycle_check_finds_a_lazy_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# The package's root: its entry points (the namespace, the CLI's `-m`, the top-level
# functions, settings, errors, dask) and the two primitives every layer uses; everything
# else lives in the folder of its layer.
ROOT_MODULES = {
    "__init__",
    "__main__",
    "api",
    "byte_cache",
    "byte_range",
    "config",
    "dask",
    "errors",
    "sizes",
}


def test_the_package_root_holds_only_entry_points_and_primitives() -> None:
    assert {p.stem for p in SRC.glob("*.py")} == ROOT_MODULES


# -- sizes -----------------------------------------------------------------------------------

# One idea per module, one step per function: past these a module or function holds
# more than one (CONTRIBUTING, "Style").
MODULE_LINES = 600
FUNCTION_LINES = 60


def test_no_module_is_over_its_size() -> None:
    sizes = {p.relative_to(SRC): len(p.read_text().splitlines()) for p in SRC.rglob("*.py")}
    assert {str(p): n for p, n in sizes.items() if n > MODULE_LINES} == {}


def test_no_function_is_over_its_size() -> None:
    long = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.name}"] = lines
    assert long == {}


# -- where tests are -------------------------------------------------------------------------

TESTS = Path(__file__).resolve().parent
# Folders of tests by what they prove across the packages, not by module.
TEST_KINDS = {
    "benchmarks": "the benchmark suite's own smoke tests",
    "bridge": "aiozarr.zarr: zarr-python's store and codec pipeline",
    "formats": "every format and writer, read end to end",
    "integrations": "the README, the examples, installs, dask, xarray",
    "interop": "peers write, aiozarr reads, and back",
    "reliability": "failures, conflicts, cancellation, memory",
    "security": "hostile input and what is refused",
    "xarray_suite": "xarray's own backend tests with aiozarr's engine",
}


def _test_folders(tests: Path) -> list[str]:
    return sorted(
        p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))
    )


def misplaced_test_folders(tests: Path, src: Path) -> list[str]:
    """Folders of `tests` that are neither a module of `src` (its tests: `tests/<module>/`)
    nor one of `TEST_KINDS`."""
    modules = {p.stem for p in src.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    return [name for name in _test_folders(tests) if name not in modules and name not in TEST_KINDS]


def test_a_modules_tests_are_found_from_its_path() -> None:
    """`src/aiozarr/storage/policy/shaping.py` is tested in `tests/storage/`; the root
    modules in `tests/` itself; the rest of `tests/` is a folder per kind."""
    assert not misplaced_test_folders(TESTS, SRC)


def test_the_test_folder_check_catches_a_folder_by_kind_not_listed(tmp_path: Path) -> None:
    (tmp_path / "src" / "storage").mkdir(parents=True)
    (tmp_path / "src" / "storage" / "__init__.py").write_text("")
    (tmp_path / "src" / "api.py").write_text("")
    for folder in ("storage", "api", "security", "unit"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
    assert misplaced_test_folders(tmp_path / "tests", tmp_path / "src") == ["unit"]
