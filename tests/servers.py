"""Names the tests share about the servers they start: retry settings for obstore
clients, the moto bucket, azurite's account, fresh key prefixes. The servers themselves
are fixtures (tests/conftest.py; azurite in tests/storage/conftest.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

# Tests retry fast and give up fast: a dead endpoint fails in well under a second.
FAST_RETRY: dict[str, Any] = {
    "max_retries": 2,
    "retry_timeout": timedelta(seconds=5),
    "backoff": {
        "init_backoff": timedelta(milliseconds=10),
        "max_backoff": timedelta(milliseconds=50),
        "base": 2,
    },
}
MOTO_BUCKET = "aiozarr-test"

#: azurite's built-in account and its well-known key (public, documented by Microsoft).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURE_CONTAINER = "aiozarr-test"


def unique_prefix() -> str:
    """A fresh key prefix, so tests sharing one server do not see each other's keys."""
    return f"t-{uuid.uuid4().hex[:12]}"


def emulator_object_store(emulator: Any) -> Any:
    """An `ObjectStore` over the emulator's bucket under a prefix of its own, obstore's
    retries fast (aiozarr switches them off anyway)."""
    from obstore.store import S3Store

    from aiozarr.storage.backends.object_store import ObjectStore

    return ObjectStore(
        S3Store(
            emulator.bucket,
            prefix=unique_prefix(),
            retry_config=FAST_RETRY,
            **emulator.storage_options(),
        )
    )
