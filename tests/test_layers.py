"""The layer rules, read from the source's imports, calls and definitions (its syntax
trees, never its text): imports only go down, `metadata` and `codecs` stay free of I/O,
the engine has one door, no private name crosses a module, no import cycle, sizes, and
CONTRIBUTING.md's map names every module there is.

Every rule is a function of a package's root folder that returns what breaks it; each
runs on `src/aiozarr` and, planted with a violation, on a small package written to
`tmp_path` (the `test_planted_*` tests), so a rule that stopped finding anything fails.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "aiozarr"
CONTRIBUTING = SRC.parents[1] / "CONTRIBUTING.md"

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
    {"byte_cache", "byte_range", "config", "errors", "fork_safe", "sizes"},
]
# Folders whose modules are layered among themselves, in the same way.
INNER_LAYERS = {
    "nodes": [
        {"display"},
        {"array", "group", "description"},
        {"node_updates", "shrinking", "placement"},
        {"hierarchy", "hierarchy_walk", "creation"},
        {"codec_roles", "selection_plans", "shape_changes", "stored_size", "write_values"},
        {"casting"},
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
# The test helpers may use the whole library.
UNLAYERED = {"testing"}


# -- the package, parsed ---------------------------------------------------------------------


@dataclass(frozen=True)
class Module:
    """One module of the package: `parts` is its path inside it (`("codecs", "chain")`,
    `("codecs", "__init__")` for the package's own module)."""

    name: str
    parts: tuple[str, ...]
    path: Path
    tree: ast.Module

    @property
    def package(self) -> str:
        return self.name if self.parts[-1] == "__init__" else self.name.rpartition(".")[0]

    def where(self, node: ast.AST) -> str:
        return f"{'/'.join(self.parts)}.py:{getattr(node, 'lineno', 0)}"


@dataclass(frozen=True)
class Import:
    """One imported module (`module`) and, for `from m import n`, the name `name`
    (None for `import m`): `from a.b import c` where `a.b.c` is a module imports it."""

    module: str
    name: str | None
    node: ast.Import | ast.ImportFrom


@functools.cache
def parse(root: Path) -> dict[str, Module]:
    """Every module of the package at `root` (named by the folder), by full name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join((root.name, *parts)).removesuffix(".__init__")
        found[name] = Module(name, parts, path, ast.parse(path.read_text()))
    return found


def imports(root: Path, module: Module) -> Iterator[Import]:
    """The package's modules `module` imports, anywhere in it (at the top, in a
    function, under TYPE_CHECKING), relative imports resolved."""
    known = parse(root)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == root.name:
                    yield Import(alias.name, None, node)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.package.split(".")
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != root.name:
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:  # `from package import module`
                    yield Import(full, None, node)
                else:
                    yield Import(base, alias.name, node)


def _target(root: Path, name: str) -> list[str]:
    """`aiozarr.a.b` -> `["a", "b"]`; the package itself -> `["__init__"]`."""
    return name.split(".")[1:] or ["__init__"]


def _rank(name: str, layers: list[set[str]], where: str) -> int:
    for rank, names in enumerate(layers):
        if name in names:
            return rank
    raise AssertionError(f"module {where}{name} is in no layer: add it to the layers")


# -- rules -----------------------------------------------------------------------------------


def upward_imports(root: Path) -> list[str]:
    """Imports of a layer above (or a forbidden one), between folders and inside the
    folders layered among themselves."""
    found = []
    for module in parse(root).values():
        own = module.parts
        if own[0] in UNLAYERED:
            continue
        rank = _rank(own[0], LAYERS, f"{root.name}.")
        for imp in imports(root, module):
            target = _target(root, imp.module)
            where = f"{module.where(imp.node)} imports {imp.module}"
            if target[0] == own[0]:
                inner = INNER_LAYERS.get(own[0])
                if inner and len(own) > 1 and len(target) > 1 and own[1] != "__init__":
                    mine = _rank(own[1], inner, f"{root.name}.{own[0]}.")
                    if _rank(target[1], inner, f"{root.name}.{own[0]}.") < mine:
                        found.append(f"{where}, a layer above it in {root.name}.{own[0]}")
            elif target[0] in FORBIDDEN.get(own[0], set()):
                found.append(f"{where}, which {root.name}.{own[0]} may not import")
            elif _rank(target[0], LAYERS, f"{root.name}.") < rank:
                found.append(f"{where}, a layer above {root.name}.{own[0]}")
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(root: Path) -> list[str]:
    """Private names (`_name`) of one module used by another: imported by name
    (`from m import _name`), as a private module (`import m._impl`), or as an
    attribute of an imported module (`m._name`). A name another module needs is public
    in the module it lives in, or moves to where it is used."""
    found = []
    for module in parse(root).values():
        aliases: dict[str, str] = {}  # local name -> the module it is bound to
        for imp in imports(root, module):
            if imp.name is not None and _is_private(imp.name) and imp.module != module.name:
                found.append(f"{module.where(imp.node)} imports {imp.module}.{imp.name}")
            if any(_is_private(p) for p in imp.module.split(".")):
                found.append(f"{module.where(imp.node)} imports the private {imp.module}")
            if imp.name is None:
                for alias in imp.node.names:
                    if isinstance(imp.node, ast.ImportFrom):
                        aliases[alias.asname or alias.name] = imp.module
                    elif alias.asname:
                        aliases[alias.asname] = imp.module
                    else:  # `import a.b` binds `a`: `a.b._x` is read below
                        aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                owner = _dotted(node.value, aliases)
                if owner is not None and owner in parse(root) and owner != module.name:
                    found.append(f"{module.where(node)} uses {owner}.{node.attr}")
    return found


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The module an expression names (`m`, `pkg.m`), through the imports' aliases."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


# The engine's one door for every layer above it (`engine/entry.py`): reads, writes, the
# engine's view of an array (`stored_array`), settings, progress, moving stored chunks.
ENGINE_ENTRY = "engine.entry"


def past_the_engine_door(root: Path) -> list[str]:
    """Outside `engine/`: imports of an engine module other than its entry, and
    `StoredArray(...)` built anywhere but by the entry's `stored_array`."""
    door = f"{root.name}.{ENGINE_ENTRY}"
    found = []
    for module in parse(root).values():
        if module.parts[0] == "engine":
            continue
        for imp in imports(root, module):
            target = _target(root, imp.module)
            if target[0] == "engine" and imp.module != door:
                name = imp.module if imp.name is None else f"{imp.module}.{imp.name}"
                if name != door:
                    found.append(f"{module.where(imp.node)} imports {name}, not {door}")
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call) and _called(node) == "StoredArray":
                found.append(f"{module.where(node)} builds a StoredArray")
    return found


def _called(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


# What the engine sees of storage: the store protocol, and the request policy's entry
# points (`storage/policy/__init__.py`: `RequestShape`, `HeldBytes`), never a backend, a
# way of opening stores, references, or the policy's inner modules: how requests are
# shaped is the policy's to decide (CONTRIBUTING, "Request size").
ENGINE_STORAGE_ROOM = "storage.protocol"
ENGINE_STORAGE_DOOR = "storage.policy"


def engine_past_protocol_and_policy(root: Path) -> list[str]:
    """Imports by `engine/` of storage other than the protocol's modules and the
    policy's package."""
    room, door = f"{root.name}.{ENGINE_STORAGE_ROOM}", f"{root.name}.{ENGINE_STORAGE_DOOR}"
    found = []
    for module in parse(root).values():
        if module.parts[0] != "engine":
            continue
        for imp in imports(root, module):
            if _target(root, imp.module)[0] != "storage":
                continue
            if imp.module == door or imp.module == room or imp.module.startswith(f"{room}."):
                continue
            name = imp.module if imp.name is None else f"{imp.module}.{imp.name}"
            found.append(f"{module.where(imp.node)} imports {name}")
    return found


# The engine's view of an array (`AsyncArray.stored`) belongs to nodes/array.py and the
# engine: the layers above ask AsyncArray's documented properties (`is_sharded`,
# `rectilinear_grid`, `chunk_key`, ...), so a change inside the engine cannot break them.
ENGINE_SIDE = (("nodes", "array"), ("engine",))
ENGINE_ATTRIBUTES = {"stored", "_stored"}


def reach_past_the_array(root: Path) -> list[str]:
    """`.stored` / `._stored` (the engine's view of an array) outside array.py and engine/."""
    found = []
    for module in parse(root).values():
        if any(module.parts[: len(side)] == side for side in ENGINE_SIDE):
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Attribute) and node.attr in ENGINE_ATTRIBUTES:
                found.append(f"{module.where(node)}: .{node.attr}")
    return found


def codec_classes(root: Path) -> dict[str, str]:
    """Every codec class (a subclass of `Codec` defined in `codecs/`, `Codec` itself
    aside) -> the module that defines it."""
    bases: dict[str, tuple[set[str], str]] = {}
    for module in parse(root).values():
        if module.parts[0] != "codecs":
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                names = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                bases[node.name] = (names, module.name)
    found: dict[str, str] = {}
    grown = True
    while grown:
        grown = False
        for name, (parents, where) in bases.items():
            if name not in found and parents & ({"Codec"} | set(found)):
                found[name] = where
                grown = True
    return found


def codecs_tested_by_class(root: Path) -> list[str]:
    """`isinstance` / `issubclass` against a codec class outside the module defining it:
    codecs are asked what they declare (`role`, `decodes_parts`, `axis_order`, ...)."""
    classes = codec_classes(root)
    found = []
    for module in parse(root).values():
        for node in ast.walk(module.tree):
            if not (isinstance(node, ast.Call) and _called(node) in {"isinstance", "issubclass"}):
                continue
            if len(node.args) != 2:
                continue
            for name in ast.walk(node.args[1]):
                named = name.id if isinstance(name, ast.Name) else getattr(name, "attr", None)
                if named in classes and classes[named] != module.name:
                    found.append(f"{module.where(node)} tests a codec by its class {named}")
    return found


def shadowed_modules(root: Path) -> list[str]:
    """Names a package binds to something other than its module of that name (the
    function `copy` hid the module `copy`): `import pkg.x` must give the module x."""
    known = parse(root)
    found = []
    for module in known.values():
        if module.parts[-1] != "__init__":
            continue
        for node in module.tree.body:
            for bound, target in _bindings(node):
                full = f"{module.name}.{bound}"
                if full in known and target != full:
                    found.append(f"{module.where(node)} binds {bound} over the module {full}")
    return found


def _bindings(node: ast.stmt) -> Iterator[tuple[str, str | None]]:
    """(name bound, the module it is bound to, or None) for a top-level statement."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name, None
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    yield name.id, None
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            yield alias.asname or alias.name, f"{node.module}.{alias.name}"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                yield alias.asname, alias.name


def import_cycles(root: Path) -> list[list[str]]:
    """The sets of modules that import each other, even lazily or for types only."""
    graph = {
        name: {imp.module for imp in imports(root, module)} - {name}
        for name, module in parse(root).items()
    }
    return [sorted(c) for c in _cycles(graph)]


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, set()):
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


# The package's root: its entry points (the namespace, the CLI's `-m`, the top-level
# functions, settings, errors) and the two primitives every layer uses; everything
# else lives in the folder of its layer.
ROOT_MODULES = {
    "__init__",
    "__main__",
    "api",
    "byte_cache",
    "byte_range",
    "config",
    "errors",
    "fork_safe",
    "sizes",
}


def modules_at_the_root(root: Path) -> list[str]:
    return sorted(p.name for p in root.glob("*.py") if p.stem not in ROOT_MODULES)


# One idea per module, one step per function: past these a module or function holds
# more than one (CONTRIBUTING, "Style").
MODULE_LINES = 600
FUNCTION_LINES = 60


def oversized(root: Path) -> list[str]:
    found = []
    for module in parse(root).values():
        lines = len(module.path.read_text().splitlines())
        if lines > MODULE_LINES:
            found.append(f"{'/'.join(module.parts)}.py: {lines} lines")
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    found.append(f"{module.where(node)} {node.name}: {length} lines")
    return found


def map_mismatches(root: Path, contributing: Path) -> list[str]:
    """Modules CONTRIBUTING.md's map (the block under "## The map") leaves out, and
    names in it of modules that do not exist. In the map a line that starts at the left
    margin with `folder/` opens that folder; `name.py` (or `sub/name.py`) inside it
    names a module; a folder outside the package (docs/, benchmarks/) is skipped."""
    named = set(_map_names(root, contributing))
    actual = {
        "/".join(m.parts) + ".py"
        for m in parse(root).values()
        if m.parts[-1] not in {"__init__", "__main__"}
    }
    return [f"the map leaves out {p}" for p in sorted(actual - named)] + [
        f"the map names {p}, which does not exist" for p in sorted(named - actual)
    ]


def _map_names(root: Path, contributing: Path) -> Iterator[str]:
    text = contributing.read_text()
    block = text.split("## The map", 1)[1].split("```", 2)[1]
    top: str | None = ""  # the folder an unindented entry opened (None: not the package's)
    folder: str | None = ""
    for line in block.splitlines():
        head = (line.split() or [""])[0]
        if line[:1].strip():
            if head.endswith("/"):
                top = head.rstrip("/") if (root / head).is_dir() else None
            elif head.endswith(".py"):
                top = ""
            folder = top
        elif top and head.endswith("/") and (root / top / head).is_dir():
            folder = f"{top}/{head.rstrip('/')}"  # an indented entry: a folder inside it
        if folder is None:
            continue
        for name in re.findall(r"(?<![\w/.])((?:\w+/)*\w+\.py)\b", line):
            yield f"{folder}/{name}" if folder else name


# -- the rules on the package ----------------------------------------------------------------


def test_imports_only_go_down() -> None:
    assert upward_imports(SRC) == []


def test_no_private_name_crosses_a_module() -> None:
    assert private_imports(SRC) == []


def test_the_engine_has_one_door() -> None:
    assert past_the_engine_door(SRC) == []


def test_the_engine_sees_only_the_store_protocol_and_the_request_policy() -> None:
    assert engine_past_protocol_and_policy(SRC) == []


def test_no_reach_past_the_array() -> None:
    assert reach_past_the_array(SRC) == []


def test_codecs_are_known_by_what_they_declare() -> None:
    assert codecs_tested_by_class(SRC) == []


def test_every_module_imports_by_its_name() -> None:
    assert shadowed_modules(SRC) == []


def test_no_import_cycle() -> None:
    assert import_cycles(SRC) == []


def test_the_package_root_holds_only_entry_points_and_primitives() -> None:
    assert modules_at_the_root(SRC) == []


def test_no_module_or_function_is_over_its_size() -> None:
    assert oversized(SRC) == []


def test_the_map_names_every_module() -> None:
    assert map_mismatches(SRC, CONTRIBUTING) == []


# -- each rule, broken on purpose ------------------------------------------------------------

# A package that keeps every rule: one module in each of a few layers.
CLEAN = {
    "__init__.py": "from aiozarr.api import open_array\n",
    "api.py": "from aiozarr.nodes.array import AsyncArray\ndef open_array(): ...\n",
    "errors.py": "class Error(Exception): ...\n",
    "nodes/__init__.py": "",
    "nodes/array.py": (
        "from aiozarr.engine import entry as engine\n"
        "from aiozarr.nodes.casting import as_dtype\n"
        "class AsyncArray:\n"
        "    def __init__(self, chain):\n"
        "        self._stored = engine.stored_array(chain)\n"
    ),
    "nodes/casting.py": "def as_dtype(value): return value\n",
    "engine/__init__.py": "",
    "engine/entry.py": (
        "from aiozarr.engine.stored_array import StoredArray\n"
        "def stored_array(chain): return StoredArray(chain)\n"
    ),
    "engine/stored_array.py": (
        "from aiozarr.codecs.chain import CodecChain\nclass StoredArray: ...\n"
    ),
    "engine/inner/__init__.py": "",
    "engine/inner/deep.py": "from aiozarr.storage.protocol import Store\n",
    "storage/__init__.py": "",
    "storage/protocol/__init__.py": "from aiozarr.storage.policy import retry\nclass Store: ...\n",
    "storage/policy/__init__.py": "",
    "storage/policy/retry.py": "",
    "storage/backends/__init__.py": "",
    "storage/backends/local.py": "from aiozarr.storage.protocol import Store\n",
    "codecs/__init__.py": "",
    "codecs/base.py": "class Codec: ...\nclass BytesCodec(Codec): ...\n",
    "codecs/chain.py": (
        "from aiozarr.codecs.base import Codec\n"
        "from aiozarr.errors import Error\n"
        "class CodecChain:\n"
        "    def split(self, codecs):\n"
        "        return [c for c in codecs if isinstance(c, Codec) and c.role]\n"
    ),
}
MAP = """# Contributing

## The map

```
api.py            the functions
nodes/            array.py (AsyncArray), casting.py
engine/           entry.py stored_array.py
  inner/          deep.py
storage/          the rooms:
  policy/         retry.py
  backends/       local.py
codecs/           base.py chain.py
errors.py         leaf
docs/             hooks.py (not a module of the package)
```
"""


def _plant(tmp_path: Path, changes: dict[str, str | None]) -> Path:
    """The clean package with `changes` (path -> source, None to remove it), written to
    `tmp_path / "aiozarr"`; returns its root."""
    root = tmp_path / "aiozarr"
    files = {**CLEAN, **changes}
    for path, source in files.items():
        if source is not None:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(source)
    (tmp_path / "CONTRIBUTING.md").write_text(MAP)
    return root


RULES: dict[str, Callable[[Path], list[object]]] = {
    "upward": upward_imports,
    "private": private_imports,
    "door": past_the_engine_door,
    "engine_storage": engine_past_protocol_and_policy,
    "array": reach_past_the_array,
    "codec_class": codecs_tested_by_class,
    "shadow": shadowed_modules,
    "cycle": import_cycles,
    "root": modules_at_the_root,
    "size": oversized,
    "map": lambda root: map_mismatches(root, root.parent / "CONTRIBUTING.md"),
}


def test_the_clean_package_keeps_every_rule(tmp_path: Path) -> None:
    root = _plant(tmp_path, {})
    assert {name: rule(root) for name, rule in RULES.items()} == {name: [] for name in RULES}


LONG_FUNCTION = "def f():\n" + "    x = 1\n" * FUNCTION_LINES

PLANTED: dict[str, dict[str, str | None]] = {
    # a codec reads the engine; inside nodes/, casting imports the array above it
    "upward": {"codecs/chain.py": "import aiozarr.engine.entry\n"},
    "upward-inner": {"nodes/casting.py": "from aiozarr.nodes import array\n"},
    "upward-forbidden": {"metadata/model.py": "from aiozarr.codecs import base\n"},
    "private": {"nodes/casting.py": "from aiozarr.errors import _hidden\n"},
    "private-attribute": {"nodes/casting.py": "import aiozarr.errors\naiozarr.errors._hidden\n"},
    "private-alias": {"nodes/casting.py": "from aiozarr import errors as e\ne._hidden()\n"},
    "private-module": {"api.py": "import aiozarr.nodes._impl\n", "nodes/_impl.py": ""},
    "door": {"api.py": "from aiozarr.engine.stored_array import StoredArray\n"},
    "door-build": {"nodes/casting.py": "from aiozarr.engine import entry\nentry.StoredArray(1)\n"},
    "array": {"api.py": "def f(a): return a.stored.layout\n"},
    "codec_class": {
        "codecs/chain.py": "from aiozarr.codecs.base import BytesCodec\nisinstance(c, BytesCodec)\n"
    },
    "shadow": {"nodes/__init__.py": "def casting(): ...\n"},
    "shadow-import": {"nodes/__init__.py": "from aiozarr.nodes.casting import as_dtype as array\n"},
    "cycle": {"codecs/base.py": "from aiozarr.codecs.chain import CodecChain\n"},
    "root": {"utils.py": ""},
    "size": {"nodes/casting.py": LONG_FUNCTION},
    "size-module": {"nodes/casting.py": "x = 1\n" * (MODULE_LINES + 1)},
    "map": {"codecs/extra.py": ""},
    "map-nested": {"engine/inner/other.py": ""},
    "upward-storage": {"storage/policy/retry.py": "from aiozarr.storage.backends import local\n"},
    "engine_storage": {"engine/inner/deep.py": "from aiozarr.storage.backends.local import X\n"},
    "engine_storage-inner": {
        "engine/inner/deep.py": "from aiozarr.storage.policy.retry import X\n"
    },
    "map-stale": {"codecs/chain.py": None},
}


@pytest.mark.parametrize("planted", sorted(PLANTED))
def test_planted_violation_is_found(tmp_path: Path, planted: str) -> None:
    root = _plant(tmp_path, PLANTED[planted])
    rule = RULES[planted.split("-")[0]]
    assert rule(root), f"rule {planted!r} found nothing in the planted package"


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


def misplaced_test_folders(tests: Path, src: Path) -> list[str]:
    """Folders of `tests` that are neither a module of `src` (its tests:
    `tests/<module>/`) nor one of `TEST_KINDS`."""
    modules = {p.stem for p in src.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    folders = [p.name for p in tests.iterdir() if p.is_dir() and p.name[:1] not in "._"]
    return sorted(name for name in folders if name not in modules and name not in TEST_KINDS)


def test_a_modules_tests_are_found_from_its_path() -> None:
    """`src/aiozarr/storage/policy/shaping.py` is tested in `tests/storage/`; the root
    modules in `tests/` itself; the rest of `tests/` is a folder per kind."""
    assert misplaced_test_folders(TESTS, SRC) == []


def test_planted_test_folder_by_kind_not_listed_is_found(tmp_path: Path) -> None:
    root = _plant(tmp_path, {})
    for folder in ("storage", "api", "security", "unit"):
        (tmp_path / "tests" / folder).mkdir(parents=True)
    assert misplaced_test_folders(tmp_path / "tests", root) == ["unit"]
