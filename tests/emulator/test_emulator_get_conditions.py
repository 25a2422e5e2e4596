"""The emulator honours S3's GET conditions (`If-Match`, `If-Unmodified-Since`,
`If-None-Match`), as the stores that send them (`storage/references/conditional_reads.py`,
the chunk cache's revalidation) need a server that does."""

from __future__ import annotations

import datetime
import os

import obstore
import pytest
from obstore.exceptions import NotModifiedError, PreconditionError
from obstore.store import S3Store

from aiozarr.emulator import Emulator


def test_get_conditions(emulator: Emulator, prefix: str) -> None:
    path = emulator.root / prefix / "data.bin"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"0123456789")
    os.utime(path, (1_000_000_000, 1_000_000_000))
    store = S3Store(emulator.bucket, **emulator.storage_options())
    key = f"{prefix}/data.bin"
    etag = obstore.head(store, key)["e_tag"]
    assert obstore.get(store, key, options={"if_match": etag, "range": (2, 4)}).bytes() == b"23"
    with pytest.raises(PreconditionError):
        obstore.get(store, key, options={"if_match": '"other"'})
    before = datetime.datetime.fromtimestamp(999_999_999, datetime.UTC)
    after = datetime.datetime.fromtimestamp(1_000_000_000, datetime.UTC)
    assert obstore.get(store, key, options={"if_unmodified_since": after}).bytes() == b"0123456789"
    with pytest.raises(PreconditionError):
        obstore.get(store, key, options={"if_unmodified_since": before})
    assert emulator.stats()["by_status"].get("412") == 2


def test_if_none_match_is_answered_304_while_the_version_is_current(
    emulator: Emulator, prefix: str
) -> None:
    path = emulator.root / prefix / "data.bin"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"0123456789")
    store = S3Store(emulator.bucket, **emulator.storage_options())
    key = f"{prefix}/data.bin"
    etag = obstore.head(store, key)["e_tag"]
    with pytest.raises(NotModifiedError):
        obstore.get(store, key, options={"if_none_match": etag, "range": {"suffix": 4}})
    with pytest.raises(NotModifiedError):
        obstore.get(store, key, options={"if_none_match": etag})
    assert emulator.stats()["by_status"].get("304") == 2
    other = obstore.get(store, key, options={"if_none_match": '"other"', "range": (2, 4)})
    assert other.bytes() == b"23"
    obstore.put(store, key, b"changed")
    assert obstore.get(store, key, options={"if_none_match": etag}).bytes() == b"changed"
