"""GCS and Azure credentials: whether a URL's storage options or the environment give
any (then the store signs; else it reads anonymously, as public data allows), and the
spellings gcsfs and adlfs users bring, as obstore's.

obstore takes each of its option names with or without a prefix and in any case
(`account_key`, `azure_storage_account_key`, `AZURE_STORAGE_ACCOUNT_KEY`, `master_key`),
and reads the environment's variables by the same names: a credential is recognised
by its name with the prefix taken off, whichever spelling came.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiozarr.errors import StoreError

__all__ = [
    "PREFIXES",
    "SIGNING",
    "adlfs_options",
    "credential_environment",
    "gcsfs_token",
    "has_credentials",
    "unsigned_yet_read",
    "without_url_account",
]

#: The prefixes obstore takes on each option name (and, upper case, its variables).
PREFIXES = {"azure": ("azure_storage_", "azure_"), "gcs": ("google_",)}
_ENV_PREFIXES = {"azure": "AZURE_", "gcs": "GOOGLE_"}
#: Option names (prefix taken off) that sign requests, or say how to find what does.
SIGNING = {
    "azure": frozenset(
        {
            "account_key",
            "access_key",
            "master_key",
            "sas_key",
            "sas_token",
            "token",
            "bearer_token",
            "client_id",
            "client_secret",
            "federated_token_file",
            "use_azure_cli",
            "msi_endpoint",
            "msi_resource_id",
            "object_id",
            "use_emulator",
        }
    ),
    "gcs": frozenset(
        {
            "service_account",
            "service_account_path",
            "service_account_key",
            "application_credentials",
            "bearer_token",
        }
    ),
}


def _base(kind: str, name: str) -> str:
    name = name.lower()
    for prefix in PREFIXES[kind]:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _signing_variables(kind: str) -> dict[str, str]:
    prefix = _ENV_PREFIXES[kind]
    return {
        name: value
        for name, value in os.environ.items()
        if value and name.upper().startswith(prefix) and _base(kind, name) in SIGNING[kind]
    }


def has_credentials(kind: str, options: Mapping[str, Any], extra: Mapping[str, Any]) -> bool:
    """Whether a `kind` ("gcs", "azure") store has something to sign with: a
    `credential_provider`, a credential option in any of obstore's spellings, or one
    in the environment."""
    if extra.get("credential_provider") is not None:
        return True
    return any(_base(kind, name) in SIGNING[kind] for name in options) or bool(
        _signing_variables(kind)
    )


def credential_environment() -> tuple[tuple[str, str], ...]:
    """The credential variables set now (GCS and Azure), for telling clients apart."""
    found = {**_signing_variables("gcs"), **_signing_variables("azure")}
    return tuple(sorted(found.items()))


def unsigned_yet_read(scheme: str) -> str:
    """Why an unsigned GCS store failed over credentials: obstore reads those the
    environment names whenever it builds one (gcsfs's token='anon' does not)."""
    named = sorted(_signing_variables("gcs"))
    if not named:
        return ""
    return (
        f" (anon=True sends no credentials, but obstore reads those the environment names "
        f"when it builds a {scheme}:// store: fix or unset {', '.join(named)})"
    )


def gcsfs_token(value: Any) -> dict[str, Any]:
    """gcsfs's `token=` as obstore's GCS options: "anon" reads unsigned, "google_default"
    (or "cloud", None) the application default credentials, a path a service account
    file, a dict a service account's key."""
    if value == "anon":
        return {"skip_signature": True}
    if value is None or value in ("google_default", "cloud"):
        return {"skip_signature": False}
    if isinstance(value, Mapping):
        return {"service_account_key": json.dumps(dict(value))}
    if isinstance(value, str | os.PathLike) and Path(value).is_file():
        return {"service_account_path": os.fspath(value)}
    raise StoreError(
        "storage option 'token' for gs:// takes gcsfs's values: 'anon', 'google_default', "
        f"a service account file's path or its contents as a dict; got {value!r} (obstore's "
        "'bearer_token' takes an OAuth token)"
    )


# adlfs's connection string parts -> obstore's Azure options.
_CONNECTION_PARTS = {
    "accountname": "account_name",
    "accountkey": "account_key",
    "sharedaccesssignature": "sas_token",
    "blobendpoint": "endpoint",
    "usedevelopmentstorage": "use_emulator",
}


def adlfs_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` with adlfs's `connection_string` made obstore's options (account, key or
    SAS, endpoint); parts obstore has no option for are refused by name."""
    if "connection_string" not in options:
        return dict(options)
    out = {k: v for k, v in options.items() if k != "connection_string"}
    for part in str(options["connection_string"]).split(";"):
        name, _, value = part.strip().partition("=")
        if not name:
            continue
        key = name.lower()
        if key in ("defaultendpointsprotocol", "endpointsuffix"):
            continue  # the endpoint obstore builds from the account says both
        if key not in _CONNECTION_PARTS:
            raise StoreError(
                f"storage option 'connection_string': part {name!r} has no obstore "
                f"counterpart (it takes {sorted(_CONNECTION_PARTS)})"
            )
        out.setdefault(_CONNECTION_PARTS[key], value)
    return out


def without_url_account(url: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` less an account name that an Azure `url` names too (hadoop's
    `abfs[s]://CONTAINER@ACCOUNT.dfs.core.windows.net/...`, which adlfs takes with the
    account in the options as well): obstore refuses an account given twice, even the
    same one. Another account is refused, naming both."""
    netloc = url.partition("://")[2].partition("/")[0]
    _, at, host = netloc.rpartition("@")
    account = host.partition(".")[0]
    if not at or not account:
        return dict(options)
    out: dict[str, Any] = {}
    for name, value in options.items():
        if _base("azure", name) != "account_name":
            out[name] = value
        elif str(value) != account:
            raise StoreError(
                f"the URL names the account {account!r} and the storage option {name!r} "
                f"the account {str(value)!r}: give one"
            )
    return out
