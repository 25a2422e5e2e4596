"""The `rectilinear` chunk grid in `zarr.json`: every form of the spec, every error, writing."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from aiozarr.errors import MetadataError
from aiozarr.metadata import array_to_json, parse_array
from aiozarr.metadata.v2 import zarray_to_json
from aiozarr.selection.chunk_grid import RectilinearGrid

KEY = "grid/zarr.json"
FIELD = "chunk_grid.configuration.chunk_shapes"


def document(chunk_shapes: Any, shape: list[int], **config: Any) -> dict[str, Any]:
    configuration = {"kind": "inline", "chunk_shapes": chunk_shapes, **config}
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": "int16",
        "chunk_grid": {"name": "rectilinear", "configuration": configuration},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }


SPEC_EXAMPLE = [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]


def test_spec_example_expands_every_form() -> None:
    meta = parse_array(json.dumps(document(SPEC_EXAMPLE, [6] * 5)), KEY)
    assert meta.chunk_grid is not None
    assert meta.chunk_grid.edges == ((4, 4), (1, 2, 3), (4, 4), (1, 1, 1, 3), (4, 4, 4))
    assert meta.chunk_shape == (4, 3, 4, 3, 4)  # the largest edge per axis
    assert meta.grid is meta.chunk_grid


@pytest.mark.parametrize(
    ("form", "size", "edges"),
    [
        (4, 6, (4, 4)),  # integer: repeated until the sum reaches the axis length
        (3, 10, (3, 3, 3, 3)),
        (4, 4, (4,)),
        (4, 0, (4,)),  # an empty axis keeps its step as one (overflow) chunk
        ([1, 2, 3], 6, (1, 2, 3)),  # explicit
        ([[4, 2]], 6, (4, 4)),  # run-length encoded
        ([[1, 3], 3], 6, (1, 1, 1, 3)),  # runs and explicit lengths mixed
        ([4, 4, 4], 6, (4, 4, 4)),  # overflow by a whole chunk
        ([2, [1, 1], [3, 1]], 5, (2, 1, 3)),  # runs of one
        ([], 0, ()),  # no edges for an empty axis
    ],
)
def test_each_form_reads(form: Any, size: int, edges: tuple[int, ...]) -> None:
    meta = parse_array(document([form], [size]), KEY)
    assert meta.chunk_grid is not None and meta.chunk_grid.edges == (edges,)


@pytest.mark.parametrize(
    ("form", "size", "written"),
    [
        (4, 6, 4),
        ([4, 4], 6, 4),  # equal edges just covering the axis: the step
        ([[4, 2]], 6, 4),
        (4, 0, 4),
        ([1, 2, 3], 6, [1, 2, 3]),
        ([[1, 3], 3], 6, [[1, 3], 3]),
        ([1, 1, 1, 3], 6, [[1, 3], 3]),  # repeated edges are written as runs
        ([4, 4, 4], 6, [[4, 3]]),  # overflow chunks are kept, so not the step
        ([2, [1, 1], [3, 1]], 5, [2, 1, 3]),
        ([[2, 1], [2, 2], 5], 9, [[2, 3], 5]),  # neighbouring runs of one length merge
        ([], 0, []),
    ],
)
def test_each_form_writes_compactly(form: Any, size: int, written: Any) -> None:
    meta = parse_array(document([form], [size]), KEY)
    out = json.loads(array_to_json(meta))
    assert out["chunk_grid"] == {
        "name": "rectilinear",
        "configuration": {"kind": "inline", "chunk_shapes": [written]},
    }
    assert parse_array(out, KEY) == meta  # and reads back as the same grid


def test_spec_example_round_trips() -> None:
    meta = parse_array(document(SPEC_EXAMPLE, [6] * 5), KEY)
    written = json.loads(array_to_json(meta))
    assert written["chunk_grid"]["configuration"]["chunk_shapes"] == [
        4,
        [1, 2, 3],
        4,
        [[1, 3], 3],
        [[4, 3]],
    ]
    assert parse_array(written, KEY) == meta


def test_regular_documents_are_unchanged() -> None:
    doc = document(None, [10, 20])
    doc["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": [5, 5]}}
    meta = parse_array(doc, KEY)
    assert meta.chunk_grid is None and meta.grid == (5, 5)
    assert json.loads(array_to_json(meta))["chunk_grid"] == doc["chunk_grid"]
    assert b'"name": "regular"' in array_to_json(meta)


def _error(chunk_shapes: Any, shape: list[int], **config: Any) -> str:
    with pytest.raises(MetadataError) as info:
        parse_array(document(chunk_shapes, shape, **config), KEY)
    message = str(info.value)
    assert message.startswith(f"{KEY}: field "), message
    return message


@pytest.mark.parametrize(
    ("chunk_shapes", "shape", "field", "expected", "got"),
    [
        ([0], [6], f"{FIELD}[0]", "a positive integer", "0"),
        ([-3], [6], f"{FIELD}[0]", "a positive integer", "-3"),
        ([True], [6], f"{FIELD}[0]", "a positive integer", "true"),
        ([2.5], [6], f"{FIELD}[0]", "a positive integer", "2.5"),
        (["4"], [6], f"{FIELD}[0]", "a positive integer", '"4"'),
        ([None], [6], f"{FIELD}[0]", "a positive integer", "null"),
        ([[1, 0, 5]], [6], f"{FIELD}[0][1]", "a positive edge length", "0"),
        ([[1, 2.0]], [3], f"{FIELD}[0][1]", "a positive edge length", "2.0"),
        ([[[4, 0]]], [6], f"{FIELD}[0][0]", "a run [length, count]", "[4, 0]"),
        ([[[0, 2]]], [6], f"{FIELD}[0][0]", "a run [length, count]", "[0, 2]"),
        ([[[4]]], [6], f"{FIELD}[0][0]", "a run [length, count]", "[4]"),
        ([[[4, 1, 1]]], [6], f"{FIELD}[0][0]", "a run [length, count]", "[4, 1, 1]"),
        ([[[4, [1]]]], [6], f"{FIELD}[0][0]", "a run [length, count]", "[4, [1]]"),
        ([[["4", 2]]], [8], f"{FIELD}[0][0]", "a run [length, count]", '["4", 2]'),
        (
            [[1, 2]],
            [6],
            f"{FIELD}[0]",
            "summing to at least the axis length 6 (they sum to 3)",
            "[1, 2]",
        ),
        ([[[2, 2]]], [5], f"{FIELD}[0]", "at least the axis length 5", "[[2, 2]]"),
        ([[]], [1], f"{FIELD}[0]", "at least the axis length 1", "[]"),
        ([[[2**62, 4]]], [1], f"{FIELD}[0]", "summing to less than 2**63", str([[2**62, 4]])),
        ([2**63], [1], f"{FIELD}[0]", "a positive integer", str(2**63)),
        ([4, 4], [6], FIELD, "1 entries (one per dimension)", "[4, 4]"),
        ([], [6], FIELD, "1 entries (one per dimension)", "[]"),
        (4, [6], FIELD, "a list of chunk edge lengths", "4"),
        ({"0": 4}, [6], FIELD, "a list of chunk edge lengths", '{"0": 4}'),
    ],
)
def test_invalid_chunk_shapes(
    chunk_shapes: Any, shape: list[int], field: str, expected: str, got: str
) -> None:
    message = _error(chunk_shapes, shape)
    assert f'field "{field}": expected ' in message
    assert expected in message and message.endswith(f"got {got}")


def test_invalid_kind_and_members() -> None:
    message = _error([4], [6], kind="external")
    assert f'"{FIELD.rsplit(".", 1)[0]}.kind": expected "inline", got "external"' in message
    message = _error([4], [6], extra=1)
    assert 'exactly the members "kind" and "chunk_shapes"' in message
    doc = document([4], [6])
    del doc["chunk_grid"]["configuration"]["kind"]
    with pytest.raises(MetadataError, match='exactly the members "kind" and "chunk_shapes"'):
        parse_array(doc, KEY)
    doc = document([4], [6])
    doc["chunk_grid"]["configuration"] = {"kind": "inline"}
    with pytest.raises(MetadataError, match=re.escape('got {"kind": "inline"}')):
        parse_array(doc, KEY)


def test_v2_refuses_a_rectilinear_grid() -> None:
    meta = parse_array(document([[1, 2, 3]], [6]), KEY)
    with pytest.raises(MetadataError, match="Zarr v2 has no rectilinear chunk grid"):
        zarray_to_json(meta)


def test_documents_are_not_changed_by_reading() -> None:
    doc = document(SPEC_EXAMPLE, [6] * 5)
    before = copy.deepcopy(doc)
    parse_array(doc, KEY)
    assert doc == before


def test_model_grid_equality_follows_the_edges() -> None:
    a = parse_array(document([[[2, 3]]], [6]), KEY).chunk_grid
    b = parse_array(document([[2, 2, 2]], [6]), KEY).chunk_grid
    assert a == b == RectilinearGrid.from_edges([[2, 2, 2]])
    assert a != parse_array(document([[2, 2, 2, 2]], [6]), KEY).chunk_grid
