"""Hostile metadata: mutated v2 and v3 documents give `aiozarr.errors` exceptions only.

A document that parses must also bind a codec chain (what opening the array does) or
fail with an aiozarr error: no KeyError, TypeError, OverflowError, RecursionError or
MemoryError may escape, whatever the document holds.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from fuzzing import (
    FULL_EXAMPLES,
    FUZZ_EXAMPLES,
    V2_SEEDS,
    V3_SEEDS,
    as_bytes,
    deeply_nested,
    fuzz_settings,
    mutated,
)
from hypothesis import given
from hypothesis import strategies as st

from aiozarr.codecs import CodecChain
from aiozarr.errors import AiozarrError, AiozarrWarning, MetadataError
from aiozarr.metadata import ArrayMetadata, parse_node, parse_zarray

KEY = "fuzz/zarr.json"


def _bind(meta: ArrayMetadata | Any) -> None:
    if isinstance(meta, ArrayMetadata):
        chain = CodecChain.from_metadata(meta, KEY)
        assert chain.spec.shape == meta.chunk_shape


def check_v3(doc: dict[str, Any], raw: bool) -> None:
    """Parse (as a mapping or as stored bytes) and bind; only aiozarr errors may escape."""
    with contextlib.suppress(AiozarrError):
        _bind(parse_node(as_bytes(doc) if raw else doc, KEY))


def check_v2(doc: dict[str, Any], raw: bool) -> None:
    with contextlib.suppress(AiozarrError):
        _bind(parse_zarray(as_bytes(doc) if raw else doc, KEY, attrs=None))


def _fuzz_test(
    check: Callable[[dict[str, Any], bool], None], seeds: list[Any], examples: int
) -> Callable[..., None]:
    @fuzz_settings(examples)
    @given(doc=mutated(seeds), raw=st.booleans())
    def test(doc: dict[str, Any], raw: bool) -> None:
        with warnings.catch_warnings():  # a writer quirk read leniently is an allowed outcome
            warnings.simplefilter("ignore", AiozarrWarning)
            check(doc, raw)

    return test


test_fuzz_v3_documents = _fuzz_test(check_v3, V3_SEEDS, FUZZ_EXAMPLES)
test_fuzz_v2_documents = _fuzz_test(check_v2, V2_SEEDS, FUZZ_EXAMPLES)
test_fuzz_v3_documents_full = pytest.mark.slow(_fuzz_test(check_v3, V3_SEEDS, FULL_EXAMPLES))
test_fuzz_v2_documents_full = pytest.mark.slow(_fuzz_test(check_v2, V2_SEEDS, FULL_EXAMPLES))


def test_seeds_are_valid() -> None:
    # The mutations start from documents that parse and bind, so the fuzzing reaches deep.
    for doc in V3_SEEDS:
        _bind(parse_node(doc, KEY))
    for doc in V2_SEEDS:
        _bind(parse_zarray(doc, KEY))


@pytest.mark.parametrize("where", ["shape", "attributes", "codecs", "fill_value"])
@pytest.mark.parametrize("depth", [5_000, 200_000])
def test_deeply_nested_json_is_a_metadata_error(where: str, depth: int) -> None:
    with pytest.raises(MetadataError, match=r"fuzz/zarr\.json"):
        parse_node(deeply_nested(depth, where), KEY)


def test_deeply_nested_v2_json_is_a_metadata_error() -> None:
    doc = b'{"zarr_format": 2, "shape": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(MetadataError):
        parse_zarray(doc, KEY)


@pytest.mark.parametrize(
    "shape, chunks",
    [
        ([10**30], [10]),
        ([2**63], [1]),
        ([10], [10**30]),
        ([2**40] * 3, [2**40] * 3),
        ([2**62, 2**62], [2**31, 2**31]),
        ([1] * 64, [1] * 64),
    ],
)
def test_huge_shapes_fail_cleanly_or_parse(shape: list[int], chunks: list[int]) -> None:
    doc = dict(
        V3_SEEDS[0],
        shape=shape,
        chunk_grid={"name": "regular", "configuration": {"chunk_shape": chunks}},
    )
    check_v3(doc, raw=True)
    check_v3(doc, raw=False)


def test_huge_document_is_parsed_without_crashing() -> None:
    # 20 MB of attributes: parsed (a big document is not an error), nothing else breaks.
    doc = dict(V3_SEEDS[0], attributes={f"k{i}": "x" * 100 for i in range(200_000)})
    meta = parse_node(as_bytes(doc), KEY)
    assert len(meta.attributes) == 200_000
