"""The sync top-level functions take exactly their async twins' arguments."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import aiozarr

NAMES = ["open_array", "open_group", "open", "create_array", "create_group"]


@pytest.mark.parametrize("name", NAMES)
def test_sync_function_shows_its_twins_arguments(name: str) -> None:
    sync, twin = getattr(aiozarr, name), getattr(aiozarr, f"{name}_async")
    assert inspect.signature(sync).parameters == inspect.signature(twin).parameters


def _takes_any_keyword(name: str) -> bool:
    parameters = inspect.signature(getattr(aiozarr, f"{name}_async")).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


@pytest.mark.parametrize("name", [n for n in NAMES if not _takes_any_keyword(n)])
def test_a_misspelled_argument_names_the_function_called(name: str, tmp_path) -> None:
    with pytest.raises(TypeError, match=rf"^{name}\(\): .*'storage_option'"):
        getattr(aiozarr, name)(str(tmp_path / "x.zarr"), storage_option={})
    assert not (tmp_path / "x.zarr").exists()  # refused before any work


def test_a_misspelled_create_option_names_the_function_called(tmp_path) -> None:
    # create_array's **options go on to array_metadata, which the caller never called
    kwargs = {"shape": (4,), "dtype": "f4", "fill_valu": 1}
    with pytest.raises(TypeError, match=r"^create_array\(\): .*'fill_valu'"):
        aiozarr.create_array(str(tmp_path / "x.zarr"), **kwargs)
    with pytest.raises(TypeError, match=r"^create_array_async\(\): .*'fill_valu'"):
        asyncio.run(aiozarr.create_array_async(str(tmp_path / "x.zarr"), **kwargs))
    group = aiozarr.open_group(str(tmp_path / "g.zarr"), mode="w")
    with pytest.raises(TypeError, match=r"^create_array\(\): .*'fill_valu'"):
        group.create_array("a", **kwargs)
    assert not (tmp_path / "x.zarr").exists() and list(group.member_names()) == []
