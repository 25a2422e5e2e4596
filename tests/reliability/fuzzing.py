"""Hypothesis building blocks for the hostile-input tests: mutated metadata documents.

Documents are valid ones (written by aiozarr itself) with random parts dropped or replaced
by random JSON, wrong types, huge or negative numbers, NaN, deep nesting and huge shapes.
The example counts: `FUZZ_EXAMPLES` in the default run, `FULL_EXAMPLES` in the slow one
(`pytest -m slow`), or `AIOZARR_FUZZ_EXAMPLES` when set.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from aiozarr.metadata import v2, v3
from aiozarr.nodes.creation import array_metadata

FUZZ_EXAMPLES = int(os.environ.get("AIOZARR_FUZZ_EXAMPLES", "500"))
FULL_EXAMPLES = 10_000


def fuzz_settings(examples: int) -> settings:
    """No deadline (2 shared cores), no database churn, the given example count."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _v3_seeds() -> list[dict[str, Any]]:
    gzip = {"name": "gzip", "configuration": {"level": 1}}
    made = [
        array_metadata(shape=(10, 20), dtype="f8", chunks=(5, 5), fill_value=float("nan")),
        array_metadata(
            shape=(10, 20),
            dtype="i4",
            chunks=(5, 5),
            shards=(10, 10),
            compressors=[gzip],
            dimension_names=["x", None],
            attributes={"a": 1},
        ),
        array_metadata(shape=(7,), dtype="u1", chunks=(3,), compressors=None),
        array_metadata(
            shape=(4, 4),
            dtype="bool",
            chunks=(2, 2),
            filters=[{"name": "transpose", "configuration": {"order": [1, 0]}}],
        ),
        array_metadata(
            shape=(6,),
            dtype="c16",
            chunks=(6,),
            compressors=[{"name": "blosc", "configuration": {"cname": "lz4"}}],
        ),
        array_metadata(shape=(5,), dtype="U4", chunks=(5,)),
        array_metadata(shape=(), dtype="i8", fill_value=3),
    ]
    docs = [json.loads(v3.array_to_json(m)) for m in made]
    group = {"zarr_format": 3, "node_type": "group", "attributes": {"b": [1, 2]}}
    consolidated = dict(
        group,
        consolidated_metadata={
            "kind": "inline",
            "must_understand": False,
            "metadata": {"a": docs[0], "g": {"zarr_format": 3, "node_type": "group"}},
        },
    )
    return [*docs, group, consolidated]


def _v2_seeds() -> list[dict[str, Any]]:
    made = [
        array_metadata(
            shape=(10, 20), dtype="<f4", chunks=(5, 5), zarr_format=2, fill_value=float("nan")
        ),
        array_metadata(shape=(10, 20), dtype="U4", chunks=(5, 5), zarr_format=2),
        array_metadata(
            shape=(9,),
            dtype="i2",
            chunks=(4,),
            zarr_format=2,
            filters=[{"id": "delta", "dtype": "i2"}],
            compressors=[{"id": "zlib", "level": 1}],
        ),
        array_metadata(
            shape=(3, 3), dtype=">u8", chunks=(2, 2), zarr_format=2, order="F", compressors=None
        ),
        array_metadata(shape=(4,), dtype=[("a", "<i4"), ("b", "<f8")], chunks=(2,), zarr_format=2),
        array_metadata(
            shape=(8,),
            dtype="M8[s]",
            chunks=(8,),
            zarr_format=2,
            compressors=[{"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 1}],
        ),
    ]
    return [json.loads(v2.zarray_to_json(m)) for m in made]


V3_SEEDS = _v3_seeds()
V2_SEEDS = _v2_seeds()

# Values that have broken parsers before: boundaries of C integer types, non-finite
# floats, empty and huge containers, strings that look like dtypes or codecs.
_INTERESTING: list[Any] = [
    0,
    -1,
    1,
    2**31,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    10**400,
    float("nan"),
    float("inf"),
    float("-inf"),
    1e308,
    -0.0,
    0.5,
    "",
    "NaN",
    "Infinity",
    "0x7ff8000000000000",
    "0x",
    "|O",
    "<f8",
    ">i2",
    "|V0",
    "V3",
    "float64",
    "int8",
    "bool",
    "string",
    "r16",
    "r0",
    "bytes",
    "zstd",
    "gzip",
    "blosc",
    "sharding_indexed",
    "transpose",
    "crc32c",
    "vlen-utf8",
    "regular",
    "default",
    "v2",
    "C",
    "F",
    "start",
    "end",
    "little",
    "big",
    "inline",
    "../x",
    "a\x00b",
    [],
    {},
    [0],
    [2**62, 2**62],
    [10**12] * 4,
    [1] * 40,
    [[1, 2], [3]],
    {"name": None},
    {"name": "bytes"},
    {"id": "zlib", "level": 99},
    {"id": "pickle"},
    {"id": 3},
    [["a", "<i4"], ["a", "<i4"]],
    [["", "<i4"]],
    [["b", "<i4", [2**40]]],
    ["x", None, 1],
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(_INTERESTING),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5)
    ),
    max_leaves=12,
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `doc` (dict keys and list indexes), the root first."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"x": value}
    return value


@st.composite
def mutated(draw: st.DrawFn, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """A seed document with 1..4 random edits (replace, drop, add, nest)."""
    doc = copy.deepcopy(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        op = draw(st.sampled_from(["replace", "drop", "add", "nest", "huge_shape"]))
        if op == "add" or not paths:
            field = draw(
                st.sampled_from(
                    [
                        "shape",
                        "chunks",
                        "codecs",
                        "filters",
                        "extra",
                        "compressor",
                        "dtype",
                        "data_type",
                        "fill_value",
                        "must_understand",
                        "storage_transformers",
                    ]
                )
            )
            doc[field] = copy.deepcopy(draw(json_values))
            continue
        path = draw(st.sampled_from(paths))
        parent = _parent(doc, path)
        if op == "replace":
            parent[path[-1]] = copy.deepcopy(draw(json_values))
        elif op == "drop":
            del parent[path[-1]]
        elif op == "nest":
            parent[path[-1]] = _nested(draw(st.integers(1, 200)), parent[path[-1]])
        else:  # a long or huge shape where a shape or number was
            parent[path[-1]] = draw(
                st.lists(
                    st.sampled_from([0, 1, 2**31, 2**40, 2**62, 2**63, 10**20]),
                    min_size=1,
                    max_size=33,
                )
            )
    return doc


def as_bytes(doc: dict[str, Any]) -> bytes:
    """The document as stored: JSON with NaN/Infinity tokens, as Python writes them."""
    return json.dumps(doc, allow_nan=True).encode()


def deeply_nested(depth: int, where: str) -> bytes:
    """A JSON text nested `depth` levels deep in the field `where` of a v3 array document."""
    doc = copy.deepcopy(V3_SEEDS[0])
    doc[where] = "@@"
    text = json.dumps(doc)
    return text.replace('"@@"', "[" * depth + "1" + "]" * depth).encode()
