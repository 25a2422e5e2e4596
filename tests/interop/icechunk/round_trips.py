"""Every read the stores of an icechunk read make, in order, with its round trip
(`aiozarr.testing.round_trips`): every store a test opens by URL (`from_url`: the
repository's own, each virtual chunk source's) logs into one `RoundTrips`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aiozarr.storage.opening import url as opening
from aiozarr.testing.round_trips import RoundTrips, RoundTripStore

__all__ = ["RoundTrips", "round_trips"]


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    """Every store opened by URL in the test logs its reads into one `RoundTrips`."""
    log = RoundTrips()
    from_url = opening.from_url
    monkeypatch.setattr(opening, "from_url", lambda *a, **k: RoundTripStore(from_url(*a, **k), log))
    yield log
