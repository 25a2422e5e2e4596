"""icechunk repositories written by the installed icechunk, once per spec version it
writes (icechunk 1.x: spec 1; 2.x: spec 2 and, asked for, spec 1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

icechunk = pytest.importorskip("icechunk")
pytest.importorskip("h5py")

from tests.interop.icechunk.generate import Written, write_repository  # noqa: E402
from tests.interop.icechunk.round_trips import round_trips  # noqa: E402, F401 (a fixture)

SPEC_VERSIONS = [None, 1] if int(icechunk.__version__.split(".")[0]) >= 2 else [None]


@pytest.fixture(scope="module", params=SPEC_VERSIONS, ids=lambda v: f"spec-{v or 'default'}")
def written(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Written]:
    yield write_repository(tmp_path_factory.mktemp("icechunk"), request.param)
