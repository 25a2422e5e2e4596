"""`RequestShape`: the one place that decides how many requests of what size a read sends."""

from __future__ import annotations

from aiozarr import config
from aiozarr.storage.policy import RequestShape
from aiozarr.storage.policy.backend import Capabilities
from aiozarr.storage.policy.statistics import Link, RequestStats

MiB = 1 << 20


def shape(part: int = 2 * MiB, target: int = 16) -> RequestShape:
    with config.set(max_request_bytes=part, connection_target=target):
        return RequestShape.of(Capabilities())


def test_as_many_objects_as_the_target_are_one_request_each() -> None:
    assert shape().counts([32 * MiB] * 16) == [1] * 16
    assert shape().counts([32 * MiB] * 40) == [1] * 40


def test_one_object_is_cut_into_parts() -> None:
    assert shape().counts([128 * MiB]) == [64]
    assert shape().counts([5 * MiB + 1]) == [3]
    assert shape().counts([MiB]) == [1]


def test_a_mix_cuts_the_large_objects_of_a_read_of_few() -> None:
    sizes = [32 * MiB, 100, 3 * MiB, 0]
    assert shape().counts(sizes) == [16, 1, 2, 1]
    # The store's requests already in flight count: a busy store gets no parts.
    assert shape().counts(sizes, busy=12) == [1, 1, 1, 1]
    assert shape().counts(sizes, busy=11) == [16, 1, 2, 1]


def test_a_stores_own_sizes_win_over_the_config() -> None:
    own = Capabilities(max_request_bytes=8 * MiB, coalesce_gap_bytes=0)
    with config.set(max_request_bytes=2 * MiB, coalesce_gap_bytes=64 << 10):
        theirs, mine = RequestShape.of(Capabilities()), RequestShape.of(own)
    assert (theirs.part_bytes, theirs.gap_bytes) == (2 * MiB, 64 << 10)
    assert (mine.part_bytes, mine.gap_bytes) == (8 * MiB, 0)


def test_settings_are_those_in_force_when_the_shape_is_made() -> None:
    made = shape(part=MiB)
    with config.set(max_request_bytes=4 * MiB):
        assert made.part_bytes == MiB  # a read keeps its shape to its last request
        assert RequestShape.of(Capabilities()).part_bytes == 4 * MiB


def test_parts_ahead_of_an_index_are_bounded_by_a_wave_and_the_budget() -> None:
    with config.set(max_request_bytes=MiB, read_ahead_fraction=0.5, parts_per_object=16):
        read = RequestShape.of(Capabilities())
    assert read.parts_ahead(8 * MiB, budget_bytes=1 << 30) == 4  # half its decoded size
    assert read.parts_ahead(1024 * MiB, budget_bytes=1 << 30) == 16  # one wave
    assert read.parts_ahead(1024 * MiB, budget_bytes=8 * MiB) == 4  # half the budget
    assert read.parts_ahead(1, budget_bytes=0) == 1  # at least one


def test_uploads_take_parts_s3_accepts() -> None:
    assert shape(part=MiB).upload_part_bytes == 5 * MiB
    assert shape(part=16 * MiB).upload_part_bytes == 16 * MiB


def test_without_a_link_the_configs_sizes_stand() -> None:
    with config.set(max_request_bytes=2 * MiB, coalesce_gap_bytes=64 << 10):
        plain = RequestShape.of(Capabilities(), link=None)
    assert (plain.part_bytes, plain.gap_bytes) == (2 * MiB, 64 << 10)


def test_a_fast_link_grows_the_gap_and_the_parts() -> None:
    # 600 MB/s once an answer begins 20 ms in: a request costs more than a MiB of gap,
    # and one answer moves 12 MB in the time another takes to begin.
    with config.set(max_request_bytes=2 * MiB, coalesce_gap_bytes=64 << 10):
        fast = RequestShape.of(Capabilities(), link=Link(0.020, 600e6))
    assert fast.gap_bytes == MiB  # at most a MiB read for nothing
    assert fast.part_bytes == 12_000_000
    assert fast.counts([11 * MiB]) == [1]  # read whole: parts would not pay
    assert fast.counts([48 * MiB]) == [5]


def test_a_slow_body_keeps_the_parts_small() -> None:
    # The cloud: 90 MB/s per answer after a 20 ms wait. Parts in parallel win.
    with config.set(max_request_bytes=2 * MiB, coalesce_gap_bytes=64 << 10):
        cloud = RequestShape.of(Capabilities(), link=Link(0.020, 90e6))
    assert cloud.part_bytes == 2 * MiB
    assert cloud.gap_bytes == 180_000
    assert cloud.counts([11 * MiB]) == [6]


def test_a_stores_own_sizes_stand_whatever_the_link() -> None:
    own = Capabilities(max_request_bytes=MiB, coalesce_gap_bytes=0)
    shaped = RequestShape.of(own, link=Link(0.020, 600e6))
    assert (shaped.part_bytes, shaped.gap_bytes) == (MiB, 0)


def test_the_link_is_known_once_a_large_read_has_told_both() -> None:
    statistics = RequestStats()
    assert statistics.link() is None
    statistics.first_bytes.add(None, 0.020)
    assert statistics.link() is None  # no body measured yet
    statistics.body_times.add(None, 0.010)  # 10 ms per MiB
    link = statistics.link()
    assert link is not None
    assert link.wait_s == 0.020
    assert round(link.body_bytes_per_s) == round(MiB / 0.010)
