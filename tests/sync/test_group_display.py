"""A group's notebook display (`Group._repr_html_`) shows one level, its first
`MOST_SHOWN` members and how many more: a bounded number of requests (one listing and
one batch of at most `MOST_SHOWN` metadata reads; none with consolidated metadata),
however large the hierarchy below."""

from __future__ import annotations

from pathlib import Path

import pytest

import aiozarr
from aiozarr.storage.backends.counting import CountingStore
from aiozarr.storage.backends.local import LocalStore
from aiozarr.sync.group_display import MOST_SHOWN

MEMBERS = MOST_SHOWN + 10


def _hierarchy(path: Path) -> None:
    root = aiozarr.create_group(LocalStore(path))
    for i in range(MEMBERS):
        group = root.create_group(f"g{i:03d}")
        for j in range(3):
            group.create_array(f"a{j}", shape=(10,), dtype="u1")
    root.create_array("z", shape=(4, 5), dtype="f8")


@pytest.mark.parametrize("consolidated", [False, True])
def test_the_display_reads_one_level_bounded(tmp_path: Path, consolidated: bool) -> None:
    _hierarchy(tmp_path / "h.zarr")
    if consolidated:
        aiozarr.consolidate_metadata(LocalStore(tmp_path / "h.zarr"))
    store = CountingStore(LocalStore(tmp_path / "h.zarr"))
    group = aiozarr.open_group(store)
    store.reset()
    html = group._repr_html_()
    if consolidated:
        assert sum(store.counts.values()) == 0
    else:
        assert store.counts["list"] == 1
        assert sum(store.counts.values()) <= 1 + MOST_SHOWN
    assert "g000/" in html and f"g{MOST_SHOWN - 1:03d}/" in html
    assert f"g{MOST_SHOWN:03d}" not in html and "a0" not in html  # one level, bounded
    assert f"... and {MEMBERS + 1 - MOST_SHOWN} more" in html


def test_a_small_group_shows_every_member(tmp_path: Path) -> None:
    root = aiozarr.create_group(LocalStore(tmp_path / "s.zarr"))
    root.create_group("g")
    root.create_array("x", shape=(4, 5), dtype="f8")
    html = root._repr_html_()
    assert "g/" in html and "x (4, 5) float64" in html and "more" not in html
