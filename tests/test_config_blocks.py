"""`with config.set(...)` in one thread does not change what other threads see once
the block began, and every block restores the settings exactly, however blocks of
several threads interleave."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from aiozarr import config


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    before = config.get()
    yield
    config.set(**{f: getattr(before, f) for f in before.__dataclass_fields__})


def _seen_by_another_thread() -> int:
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(config.get().max_concurrency))
    thread.start()
    thread.join(10)
    return seen[0]


def test_another_thread_does_not_see_a_block_once_it_began() -> None:
    default = config.get().max_concurrency
    with config.set(max_concurrency=default + 3):
        assert _seen_by_another_thread() == default
        assert config.get().max_concurrency == default + 3
    assert _seen_by_another_thread() == default


@pytest.mark.parametrize(
    "second", [{"max_concurrency": 9}, {"coalesce_gap_bytes": 5}], ids=["same", "another"]
)
def test_interleaved_blocks_restore_exactly(second: dict[str, int]) -> None:
    # Thread A evaluates its `config.set(...)`, thread B its own, then each enters and
    # leaves its block: the order two threads' `with` statements can take.
    default = config.get()
    first, then = config.set(max_concurrency=7), config.set(**second)
    with first:
        assert config.get().max_concurrency == 7
    with then:
        expected = {"max_concurrency": default.max_concurrency} | second
        assert {k: getattr(config.get(), k) for k in expected} == expected  # the first's over
    assert config.get() == default


def test_a_plain_call_still_reaches_every_thread() -> None:
    config.set(max_concurrency=11)
    assert _seen_by_another_thread() == 11
