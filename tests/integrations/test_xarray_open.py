"""Opening with `engine="aiozarr"` as `engine="zarr"` opens: strings, HTTP, keys, the
things accepted as a store, errors and request statistics."""

from __future__ import annotations

import asyncio
import shutil
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

import aiozarr  # noqa: E402
from aiozarr.emulator import Emulator  # noqa: E402
from aiozarr.errors import CodecError, GroupNotFoundError  # noqa: E402
from aiozarr.storage.opening.url import from_url  # noqa: E402
from aiozarr.xarray import store_of  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::zarr.errors.ZarrUserWarning"),
    # xarray's warning when a group opened with consolidated=None has no consolidated
    # metadata (test_xarray_round_trips.py asserts it)
    pytest.mark.filterwarnings("ignore:Failed to open Zarr store with consolidated:RuntimeWarning"),
]

N_STRINGS, STRING_CHUNK = 200, 20


def fresh(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}.zarr"


def write(ds: xr.Dataset, where: Path, **kwargs: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(where, **kwargs)


def strings() -> xr.Dataset:
    """Variable-length strings (zarr v3 `string`) as a data variable and a non-index
    coordinate, beside a number variable and a dimension coordinate."""
    words = np.array([f"wörd {i}" * (i % 3) for i in range(N_STRINGS)], dtype=object)
    return xr.Dataset(
        {"word": ("n", words), "value": ("n", np.arange(N_STRINGS, dtype="f8"))},
        coords={"n": np.arange(N_STRINGS), "label": ("n", words[::-1].copy())},
    )


def test_v3_strings_stay_lazy_with_their_chunks(
    emulator: Emulator, local_path: Callable[[str], Path], emulator_store: Callable[[str], Any]
) -> None:
    path = fresh("strings")
    encoding = {name: {"chunks": (STRING_CHUNK,)} for name in ("word", "label", "value")}
    write(strings(), local_path(path), zarr_format=3, encoding=encoding)
    store = emulator_store(path)
    ours = xr.open_dataset(store, engine="aiozarr")
    theirs = xr.open_dataset(local_path(path), engine="zarr")
    read = {key for op, key, _ in store.requests if op == "get"}
    assert not [k for k in read if k.startswith(("word/c", "label/c"))], sorted(read)
    for name in ("word", "label"):
        assert ours[name].dtype == theirs[name].dtype
        for key in ("chunks", "preferred_chunks", "dtype"):
            assert ours[name].encoding[key] == theirs[name].encoding[key], key
    xr.testing.assert_identical(ours.load(), theirs.load())
    lazy = xr.open_dataset(store, engine="aiozarr", chunks={})
    assert (
        lazy.word.chunks == xr.open_dataset(local_path(path), engine="zarr", chunks={}).word.chunks
    )
    assert lazy.word.chunks == ((STRING_CHUNK,) * (N_STRINGS // STRING_CHUNK),)
    raw = xr.open_dataset(store, engine="aiozarr", decode_cf=False)
    assert not raw.word.variable._in_memory
    assert raw.word[3].values == theirs.word[3].values


def test_http_store_with_consolidated_v2_metadata(
    emulator: Emulator, local_path: Callable[[str], Path], emulator_store: Callable[[str], Any]
) -> None:
    path = fresh("http")
    write(strings(), local_path(path), zarr_format=2, consolidated=True)
    theirs = xr.open_dataset(local_path(path), engine="zarr")
    over_http = xr.open_dataset(emulator.http_url(path), engine="aiozarr")
    xr.testing.assert_identical(over_http.load(), theirs.load())
    # on S3 the consolidated document answers: one batch of group documents, with the
    # listing beside it (it would save a round trip without consolidated metadata)
    store = emulator_store(path)
    xr.open_dataset(store, engine="aiozarr", decode_times=False)
    assert store.counts["list"] <= 1
    assert [r.key for r in store.batches[0]] == ["zarr.json", ".zgroup", ".zattrs", ".zmetadata"]
    assert store.depth == 2  # the documents (and listing), then the dimension coordinate
    # unconsolidated over HTTP cannot be listed: a clear error, as for engine="zarr"
    bare = fresh("bare")
    write(strings(), local_path(bare), zarr_format=2, consolidated=False)
    with pytest.raises(GroupNotFoundError, match="cannot list"):
        xr.open_dataset(emulator.http_url(bare), engine="aiozarr")


def tree() -> xr.DataTree:
    return xr.DataTree.from_dict(
        {"/": xr.Dataset(attrs={"root": 1}), "/a": strings(), "/a/b": strings().drop_vars("word")}
    )


@pytest.mark.parametrize("group", [None, "a"])
def test_open_groups_keys_as_zarr_engine(tmp_path: Path, group: str | None) -> None:
    write(tree(), tmp_path / "t.zarr", zarr_format=3, consolidated=False)
    ours = xr.open_groups(tmp_path / "t.zarr", engine="aiozarr", group=group)
    theirs = xr.open_groups(tmp_path / "t.zarr", engine="zarr", group=group, consolidated=False)
    assert list(ours) == list(theirs)
    for key in theirs:
        xr.testing.assert_identical(ours[key], theirs[key])
    xr.testing.assert_identical(
        xr.open_datatree(tmp_path / "t.zarr", engine="aiozarr", group=group),
        xr.open_datatree(tmp_path / "t.zarr", engine="zarr", group=group, consolidated=False),
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_a_subgroup_opens_from_the_roots_consolidated_metadata(
    emulator: Emulator, local_path: Callable[[str], Path], zarr_format: int
) -> None:
    """xarray consolidates a data tree (and `to_zarr(group=...)`) at the root only, and
    its engine reads a subgroup's members there: `consolidated=True` refused the group
    as "not consolidated", and over HTTP (no listing) it could not be opened at all."""
    path = fresh("subgroup")
    write(tree(), local_path(path), zarr_format=zarr_format, consolidated=True)
    theirs = xr.open_dataset(local_path(path), engine="zarr", group="a/b", consolidated=True)
    http = emulator.http_url(path)
    for where, consolidated in ((local_path(path), True), (http, True), (http, None)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback: it is there
            ours = xr.open_dataset(where, engine="aiozarr", group="a/b", consolidated=consolidated)
        xr.testing.assert_identical(ours.load(), theirs.load())
    xr.testing.assert_identical(
        xr.open_datatree(emulator.http_url(path), engine="aiozarr", group="a"),
        xr.open_datatree(local_path(path), engine="zarr", group="a", consolidated=True),
    )


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_zarr_format_skips_the_probe(
    emulator: Emulator,
    local_path: Callable[[str], Path],
    emulator_store: Callable[[str], Any],
    zarr_format: int,
) -> None:
    path = fresh("fmt")
    write(strings(), local_path(path), zarr_format=zarr_format, consolidated=True)
    store = emulator_store(path)
    ours = xr.open_dataset(store, engine="aiozarr", zarr_format=zarr_format)
    theirs = xr.open_dataset(local_path(path), engine="zarr", zarr_format=zarr_format)
    xr.testing.assert_identical(ours.load(), theirs.load())
    other = ".zgroup" if zarr_format == 3 else "zarr.json"
    assert not [k for _, k, _ in store.requests if k == other]
    # the other format: no group there, a FileNotFoundError from both engines
    for engine in ("zarr", "aiozarr"):
        with pytest.raises(FileNotFoundError):
            xr.open_dataset(local_path(path), engine=engine, zarr_format=5 - zarr_format)
        with pytest.raises(ValueError, match="zarr_format"):
            xr.open_dataset(local_path(path), engine=engine, zarr_format=4)
    with pytest.raises(GroupNotFoundError):
        xr.open_dataset(local_path(path), engine="aiozarr", zarr_format=5 - zarr_format)


def test_group_and_array_as_the_thing_to_open(tmp_path: Path) -> None:
    write(tree(), tmp_path / "t.zarr", zarr_format=3)
    theirs = xr.open_dataset(tmp_path / "t.zarr", engine="zarr", group="a")
    group = aiozarr.open_group(tmp_path / "t.zarr", "a", mode="r")
    xr.testing.assert_identical(xr.open_dataset(group, engine="aiozarr"), theirs)
    root = aiozarr.open_group(tmp_path / "t.zarr", mode="r")
    xr.testing.assert_identical(xr.open_dataset(root, engine="aiozarr", group="a"), theirs)
    xr.testing.assert_identical(
        xr.open_dataset(root.async_group, engine="aiozarr", group="a"), theirs
    )
    # an array: itself, with its coordinates (the dimension coordinate beside it)
    word = xr.open_dataset(group["word"], engine="aiozarr")
    assert set(word.variables) == {"word", "n"}
    xr.testing.assert_identical(word.word.load(), theirs.word.reset_coords(drop=True).load())
    with pytest.raises(aiozarr.errors.AiozarrError, match="tree opens from a group"):
        xr.open_datatree(group["word"], engine="aiozarr")


def test_errors_are_aiozarr_errors(tmp_path: Path, emulator: Emulator) -> None:
    for engine in ("zarr", "aiozarr"):
        with pytest.raises(FileNotFoundError):
            xr.open_dataset(tmp_path / "missing.zarr", engine=engine)
        with pytest.raises(FileNotFoundError):  # HTTP: as missing as a path
            xr.open_dataset(emulator.http_url("missing.zarr"), engine=engine)
    with pytest.raises(GroupNotFoundError):
        xr.open_dataset(
            emulator.s3_url("missing.zarr"),
            engine="aiozarr",
            storage_options=emulator.storage_options(),
        )
    with pytest.raises(GroupNotFoundError, match="no Zarr group"):
        xr.open_dataset(tmp_path / "missing.zarr", engine="aiozarr")
    # corrupt chunks of two variables: one CodecError, not an ExceptionGroup
    ds = xr.Dataset({"a": ("x", np.arange(50.0)), "b": ("x", np.arange(50.0))})
    write(
        ds,
        tmp_path / "c.zarr",
        zarr_format=3,
        encoding={"a": {"chunks": (10,)}, "b": {"chunks": (10,)}},
    )
    for name in ("a", "b"):
        (tmp_path / "c.zarr" / name / "c" / "2").write_bytes(b"not zstd")
    opened = xr.open_dataset(tmp_path / "c.zarr", engine="aiozarr")
    with pytest.raises(CodecError, match=r"c/2"):
        opened.load()
    with pytest.raises(CodecError):
        opened.a.values  # noqa: B018
    with pytest.raises(Exception) as theirs:
        xr.open_dataset(tmp_path / "c.zarr", engine="zarr").load()
    assert not isinstance(theirs.value, BaseExceptionGroup)


async def test_load_async_errors_are_aiozarr_errors(tmp_path: Path) -> None:
    ds = xr.Dataset({"a": ("x", np.arange(50.0)), "b": ("x", np.arange(50.0))})
    write(
        ds,
        tmp_path / "c.zarr",
        zarr_format=3,
        encoding={"a": {"chunks": (10,)}, "b": {"chunks": (10,)}},
    )
    shutil.copy(tmp_path / "c.zarr" / "a" / "zarr.json", tmp_path / "c.zarr" / "a" / "c" / "1")
    opened = xr.open_dataset(tmp_path / "c.zarr", engine="aiozarr")
    with pytest.raises(CodecError, match=r"c/1"):
        await opened.load_async()


def test_store_of_gives_the_request_statistics(
    emulator: Emulator, local_path: Callable[[str], Path]
) -> None:
    path = fresh("stats")
    write(strings(), local_path(path), zarr_format=3)
    store = from_url(emulator.s3_url(path), storage_options=emulator.storage_options())
    ds = xr.open_dataset(store, engine="aiozarr")
    assert store_of(ds) is store
    assert store_of(ds.value) is store  # through its lazy values
    before = store_of(ds).stats()["reads"]
    assert before > 0
    ds[["value"]].load()
    assert store_of(ds).stats()["reads"] > before
    assert store_of(ds[["word"]]) is store
    assert store_of(xr.open_dataset(store, engine="aiozarr", chunks={})) is store
    with pytest.raises(ValueError, match="engine='aiozarr'"):
        store_of(xr.open_dataset(local_path(path), engine="zarr"))


def coordinates() -> xr.Dataset:
    """Data variables with every kind of coordinate: dimension coordinates (one of them
    strings), and non-index ones: strings, CF datetimes (which xarray's decoder probes
    at its first and last element when the dataset opens) and a 2-d float field."""
    n = 24
    words = np.array([f"site {i}" for i in range(n)], dtype=object)
    return xr.Dataset(
        {f"v{i}": (("time", "site"), np.full((n, 3), float(i))) for i in range(4)},
        coords={
            "time": np.arange(n),
            "site": np.array(["a", "bb", "ccc"], dtype=object),
            "label": ("time", words),
            "when": ("time", np.datetime64("2020-01-01", "ns") + np.arange(n) * 3_600_000_000_000),
            "lat": (("time", "site"), np.linspace(0, 1, n * 3).reshape(n, 3)),
        },
    )


@pytest.mark.parametrize(("consolidated", "most"), [(True, 2), (False, 3)])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_warm_open_round_trips_with_string_and_non_index_coordinates(
    local_path: Callable[[str], Path],
    emulator_store: Callable[[str], Any],
    consolidated: bool,
    most: int,
    zarr_format: int,
) -> None:
    path = fresh("coords")
    encoding = {"when": {"chunks": (8,)}}  # first and last element in different chunks
    write(
        coordinates(),
        local_path(path),
        zarr_format=zarr_format,
        consolidated=consolidated,
        encoding=encoding,
    )
    xr.open_dataset(emulator_store(path), engine="aiozarr")  # this process has seen it
    store = emulator_store(path)
    ours = xr.open_dataset(store, engine="aiozarr")
    assert store.depth <= most, store.requests
    read = [key for op, key, _ in store.requests if op == "get"]
    assert not [k for k in read if k.startswith(("v", "lat/", "label/")) and "/c" in k], read
    assert len(read) == len(set(read)), read  # no key read twice
    theirs = xr.open_dataset(local_path(path), engine="zarr", consolidated=consolidated)
    for name in ("when", "label", "lat"):
        # v2 strings are object here, StringDType in zarr-python 3 (docs/decisions/integrations.md)
        same = name != "label" or zarr_format == 3
        assert ours[name].dtype == (theirs[name].dtype if same else object)
        assert not ours[name].variable._in_memory  # non-index coordinates stay lazy
    xr.testing.assert_identical(ours.load(), theirs.load())
    # without time decoding nothing of "when" is read ahead
    store = emulator_store(path)
    raw = xr.open_dataset(store, engine="aiozarr", decode_times=False)
    assert not [k for _, k, _ in store.requests if k.startswith("when/") and "/c" in k]
    xr.testing.assert_identical(
        raw.load(),
        xr.open_dataset(
            local_path(path), engine="zarr", consolidated=consolidated, decode_times=False
        ).load(),
    )


async def test_concurrent_loads_read_a_shared_coordinate_once(
    local_path: Callable[[str], Path], emulator_store: Callable[[str], Any]
) -> None:
    path = fresh("shared")
    write(coordinates(), local_path(path), zarr_format=3)
    store = emulator_store(path)
    ours = xr.open_dataset(store, engine="aiozarr")
    names = [f"v{i}" for i in range(4)]
    store.reset()
    loaded = await asyncio.gather(*(ours[name].load_async() for name in names))
    read = [key for op, key, _ in store.requests if op == "get"]
    # each variable's chunk, and each coordinate they share once (not once per variable)
    assert sorted(read) == sorted(
        [*(f"{n}/c/0/0" for n in names), "label/c/0", "lat/c/0/0", "when/c/0"]
    )
    assert store.depth == 1
    theirs = xr.open_dataset(local_path(path), engine="zarr")
    for name, got in zip(names, loaded, strict=True):
        xr.testing.assert_identical(got, theirs[name].load())


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_scalar_variables(tmp_path: Path, zarr_format: int) -> None:
    # zarr-python writes no dimension_names for a v3 scalar: it needs none
    ds = xr.Dataset(
        {"total": ((), 42.5), "v": ("x", np.arange(3.0))},
        coords={"reference": ((), np.datetime64("2020-01-02T03:00", "ns"))},
    )
    write(ds, tmp_path / "s.zarr", zarr_format=zarr_format)
    xr.testing.assert_identical(
        xr.open_dataset(tmp_path / "s.zarr", engine="aiozarr"),
        xr.open_dataset(tmp_path / "s.zarr", engine="zarr").load(),
    )
