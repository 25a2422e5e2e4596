"""Credentials resolved in the process that makes the request, not the one that opened
the store.

An array pickles as its store's configuration, so S3 keys given in `storage_options`
travel in clear text into every dask graph and worker that receives the array. Give a
`credential_provider` instead, and the keys stay where they are:

    aiozarr.open_array("s3://bucket/x.zarr",
                       storage_options={"credential_provider": EnvironmentCredentials()})

pickles to the provider's class name alone; each worker signs with the keys of its own
environment (its instance role's, through `AWS_*` variables its launcher sets).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aiozarr.errors import StoreError

__all__ = ["EnvironmentCredentials"]

# How long obstore may keep a credential before asking again: keys rotated in the
# environment (a refreshed session token) are picked up within this.
_REFRESH = timedelta(minutes=5)


@dataclass(frozen=True)
class EnvironmentCredentials:
    """An S3 credential provider (obstore's `credential_provider`) reading
    `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` from the
    environment of the process making the request, each time it is asked."""

    def __call__(self) -> dict[str, Any]:
        env = os.environ
        key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if not key or not secret:
            raise StoreError(
                "no S3 credentials in this process's environment: EnvironmentCredentials "
                "needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (on every worker)"
            )
        return {
            "access_key_id": key,
            "secret_access_key": secret,
            "token": env.get("AWS_SESSION_TOKEN") or None,
            "expires_at": datetime.now(UTC) + _REFRESH,
        }
