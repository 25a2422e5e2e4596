"""obstore's client settings under aiozarr: its retries off (the request policy retries,
once) and no whole-request timeout (the policy's, scaled to each request, counts)."""

from __future__ import annotations

from typing import Any

from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store

__all__ = ["CLIENT_TIMEOUT", "without_retries"]

# obstore's whole-request timeout (default 30 s) would cut big range reads short; the
# request policy's timeout, scaled to each request's size, is the one that counts.
CLIENT_TIMEOUT = "24h"


def without_retries(store: Any) -> Any:
    """The same obstore store with obstore's retries off (aiozarr retries, once).

    A built-in remote store is rebuilt from its own settings (config, prefix, client
    options, credential provider) with `max_retries: 0`, and with no whole-request
    timeout unless one was set. Anything else, or a store that cannot be rebuilt, is
    returned as it is.
    """
    retry_config = dict(getattr(store, "retry_config", None) or {})
    client = dict(getattr(store, "client_options", None) or {})
    if retry_config.get("max_retries") == 0 and "timeout" in client:
        return store
    retry_config["max_retries"] = 0
    client.setdefault("timeout", CLIENT_TIMEOUT)
    try:
        if isinstance(store, HTTPStore):
            return HTTPStore(store.url, client_options=client, retry_config=retry_config)
        if isinstance(store, S3Store | GCSStore | AzureStore):
            return type(store)(
                prefix=store.prefix,
                config=store.config,
                client_options=client,
                retry_config=retry_config,
                credential_provider=store.credential_provider,
            )
    except Exception:  # an exotic configuration: keep the user's store as given
        return store
    return store
