"""`aiozarr.config.set`: a plain call changes the process's settings; `with` scopes them."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import aiozarr
from aiozarr import config
from aiozarr.errors import AiozarrError


@pytest.fixture(autouse=True)
def _restore() -> Iterator[None]:
    before = config.get()
    yield
    config.set(**{f: getattr(before, f) for f in before.__dataclass_fields__})


def test_a_plain_call_changes_the_setting_for_the_process() -> None:
    default = config.get().max_concurrency
    config.set(max_concurrency=default + 7)
    assert config.get().max_concurrency == default + 7
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(config.get().max_concurrency))
    thread.start()
    thread.join()
    assert seen == [default + 7]  # another thread sees it: it is process-wide


def test_the_with_form_is_scoped_to_its_block() -> None:
    default = config.get().coalesce_gap_bytes
    with config.set(coalesce_gap_bytes=default + 1) as settings:
        assert settings.coalesce_gap_bytes == default + 1
        assert config.get().coalesce_gap_bytes == default + 1
    assert config.get().coalesce_gap_bytes == default


def test_a_change_made_before_with_applies_only_inside() -> None:
    default = config.get().retry_attempts
    change = config.set(retry_attempts=default + 2)
    with change:
        assert config.get().retry_attempts == default + 2
    assert config.get().retry_attempts == default


def test_a_plain_call_inside_a_block_ends_with_the_block() -> None:
    default = config.get().max_request_bytes
    with config.set(max_concurrency=3):
        config.set(max_request_bytes=default + 5)
        assert config.get().max_request_bytes == default + 5
        assert config.get().max_concurrency == 3
    assert config.get().max_request_bytes == default


def test_a_block_inside_a_block_ends_with_its_block() -> None:
    with config.set(hedge_reads=True):
        with config.set(hedge_reads=False):
            assert config.get().hedge_reads is False
        assert config.get().hedge_reads is True


def test_the_sync_facade_carries_a_plain_change_into_its_loop() -> None:
    seen: list[int] = []

    async def read_setting() -> None:
        seen.append(config.get().codec_threads)

    config.set(codec_threads=5)
    aiozarr.sync.run(read_setting)
    assert seen == [5]


def test_unknown_settings_are_refused() -> None:
    with pytest.raises(AiozarrError, match="no_such_setting"):
        config.set(no_such_setting=1)
