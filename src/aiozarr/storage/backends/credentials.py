"""S3 credentials, found where the AWS tools find them, resolved in the process that
makes the request.

`from_url` looks for credentials in the order boto3 and s3fs do (`choose_s3_signing`):

1. the storage options: `key`/`secret`/`token` (or obstore's names), a
   `credential_provider`, and `profile=NAME` (which, as for boto3, puts the
   environment's keys aside);
2. the environment: `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, a web identity token
   (`AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`), a container role
   (`AWS_CONTAINER_CREDENTIALS_*_URI`): obstore reads these itself;
3. the profile of the shared files named by `AWS_PROFILE`, else their `[default]`:
   static keys are read here (`ProfileCredentials`), a profile that assumes a role
   (`role_arn`, `source_profile`), signs in with SSO or runs a `credential_process` is
   handed to boto3 (the `aiozarr[aws]` extra);
4. an EC2 instance role, which obstore fetches and renews;
5. none: requests go unsigned, which public buckets take; with `anon=False`, the
   store is refused at open where the metadata service (probed once) lists no role.

The profile's `region` is used when no option or `AWS_REGION` names one.

Keys never travel in a pickle: an array pickles as its store's configuration, so a
store opened by profile pickles to the profile's name, and each worker reads its own
files. `EnvironmentCredentials` does the same with the environment's keys:

    aiozarr.open_array("s3://bucket/x.zarr",
                       storage_options={"credential_provider": EnvironmentCredentials()})
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aiozarr.errors import StoreError
from aiozarr.storage.backends import aws_config

__all__ = [
    "EnvironmentCredentials",
    "ProfileCredentials",
    "choose_s3_signing",
    "fetch_failed",
    "refusal",
]

# How long obstore may keep a credential before asking again: keys rotated in the
# environment or the files (a refreshed session token) are picked up within this.
_REFRESH = timedelta(minutes=5)
# Where S3 credentials may come from besides the shared files, as option names and as
# environment variables (obstore reads the latter itself).
_S3_OPTIONS = ("access_key_id", "session_token", "role_arn", "web_identity_token_file")
_S3_ENV = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ROLE_ARN",
)
# Words in the name of an option that may give obstore's chain credentials of its own.
_SIGNING_WORDS = ("key", "token", "credential", "role", "imds")
#: Environment variables that decide which S3 credentials and region a store uses.
S3_ENVIRONMENT = (
    *_S3_ENV,
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_METADATA_ENDPOINT",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_IMDSV1_FALLBACK",
    "HOME",
)
#: The ways to give a store AWS credentials, for error messages.
AWS_WAYS = (
    "one of: AWS_PROFILE=NAME (or the storage option profile=NAME) for a profile of "
    "~/.aws/credentials or ~/.aws/config; AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
    "in the environment; the storage options key and secret (and token); an instance "
    "or container role"
)


@dataclass(frozen=True)
class EnvironmentCredentials:
    """An S3 credential provider (obstore's `credential_provider`) reading
    `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` from the
    environment of the process making the request, each time it is asked."""

    @property
    def source(self) -> str:
        """Where the credentials come from, for error messages."""
        return "the environment's keys (AWS_ACCESS_KEY_ID, by EnvironmentCredentials)"

    def __call__(self) -> dict[str, Any]:
        env = os.environ
        key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if not key or not secret:
            raise StoreError(
                "no S3 credentials in this process's environment: EnvironmentCredentials "
                "needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (on every worker)"
            )
        return _credential(key, secret, env.get("AWS_SESSION_TOKEN") or None)


@dataclass(frozen=True)
class ProfileCredentials:
    """An S3 credential provider: the credentials of profile `profile` of the AWS
    shared files of the process making the request, read each time it is asked.

    Static keys are read from the files; a profile that assumes a role, signs in with
    SSO or runs a `credential_process` gets its credentials from boto3 (installed with
    `aiozarr[aws]`), which renews them. Pickles as the profile's name.
    """

    profile: str = "default"

    @property
    def source(self) -> str:
        """Where the credentials come from, for error messages."""
        return f"the credentials of AWS profile {self.profile!r}"

    def __call__(self) -> dict[str, Any]:
        profile = aws_config.read_profile(self.profile)
        if profile is None:
            raise StoreError(_no_profile(self.profile))
        if profile.needs_boto3:
            provider = _boto3_provider(self.profile, profile.needs_boto3)
            try:
                return dict(provider())
            except Exception as error:  # botocore: an expired SSO login, STS refusing
                raise StoreError(
                    f"cannot get the credentials of AWS profile {self.profile!r} from "
                    f"boto3: {error}"
                ) from error
        if profile.keys is None:
            raise StoreError(
                f"AWS profile {self.profile!r} holds no credentials (no aws_access_key_id "
                "and aws_secret_access_key, role_arn, sso_session or credential_process)"
            )
        return _credential(*profile.keys)


def _credential(key: str, secret: str, token: str | None) -> dict[str, Any]:
    return {
        "access_key_id": key,
        "secret_access_key": secret,
        "token": token,
        "expires_at": datetime.now(UTC) + _REFRESH,
    }


def _no_profile(name: str) -> str:
    files = f"{str(aws_config.config_file())!r} or {str(aws_config.credentials_file())!r}"
    return f"no AWS profile {name!r} in {files}"


# -- boto3, for the profiles it alone can serve -----------------------------------------

_boto3_providers: dict[tuple[Any, ...], Callable[[], Any]] = {}
_boto3_lock = threading.Lock()


def _needs_boto3_message(name: str, setting: str) -> str:
    return (
        f"AWS profile {name!r} gets its credentials through {setting}, which aiozarr "
        "leaves to boto3, and boto3 is not installed: pip install 'aiozarr[aws]'"
    )


def _boto3_provider(name: str, setting: str) -> Callable[[], Any]:
    """obstore's boto3 credential provider for profile `name`, one per process and
    files (boto3 keeps and renews the credentials it fetched)."""
    key = (os.getpid(), name, aws_config.files_state())
    with _boto3_lock:
        provider = _boto3_providers.get(key)
    if provider is not None:
        return provider
    try:
        import boto3
        from obstore.auth.boto3 import Boto3CredentialProvider
    except ImportError:
        raise StoreError(_needs_boto3_message(name, setting)) from None
    try:
        provider = Boto3CredentialProvider(boto3.Session(profile_name=name), ttl=_REFRESH)
    except Exception as error:  # botocore: the profile or its source is missing
        raise StoreError(f"boto3 found no credentials for AWS profile {name!r}: {error}") from None
    with _boto3_lock:
        _boto3_providers[key] = provider
    return provider


# -- choosing how a store signs ---------------------------------------------------------


def _flag(value: Any) -> bool | None:
    """A yes/no option as obstore takes it (a bool or "true"/"false"); None if unset."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "requester")
    return bool(value)


def choose_s3_signing(options: dict[str, Any], extra: dict[str, Any]) -> None:
    """Settle how an S3 store signs, as the AWS tools would (see the module's
    docstring): `options` (obstore's S3 settings, fsspec's `profile` among them) and
    `extra` (`credential_provider`) are changed in place; raises `StoreError` for a
    named profile that is missing or a requester-pays store with no credentials."""
    named = options.pop("profile", None)
    if named is not None and (not isinstance(named, str) or not named.strip()):
        raise StoreError(f"storage option 'profile' must be a profile's name, got {named!r}")
    env = os.environ
    name = named or env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    anonymous = _flag(options.get("skip_signature"))
    pays = bool(_flag(options.get("request_payer")))
    profile = aws_config.read_profile(name)
    regions = (options.get("region"), env.get("AWS_REGION"), env.get("AWS_DEFAULT_REGION"))
    if not any(regions) and profile is not None and profile.region:
        options["region"] = profile.region
    if anonymous:
        if pays:
            raise StoreError(
                "requester_pays=True needs signed requests, and anon=True sends them "
                "unsigned: S3 refuses an anonymous requester-pays request"
            )
        return
    if profile is None and (named is not None or name != "default"):  # named, not there
        raise StoreError(_no_profile(name))
    if extra.get("credential_provider") is not None or any(n in options for n in _S3_OPTIONS):
        return  # the options' credentials
    if named is None and any(env.get(e) for e in _S3_ENV):
        return  # the environment's, which obstore reads
    if profile is not None and (profile.has_credentials or named is not None):
        if profile.needs_boto3 and importlib.util.find_spec("boto3") is None:
            raise StoreError(_needs_boto3_message(name, profile.needs_boto3))
        extra["credential_provider"] = ProfileCredentials(name)
        return
    if anonymous is False:
        _require_instance_role(options)
        return  # obstore's own chain: the instance role
    if aws_config.has_instance_role(options.get("metadata_endpoint")):
        return  # obstore's own chain: the instance role
    if pays:
        raise StoreError(
            "requester_pays=True needs signed requests (S3 refuses an anonymous "
            f"requester-pays request), and no AWS credentials were found: give them with {AWS_WAYS}"
        )
    options["skip_signature"] = True


def _require_instance_role(options: dict[str, Any]) -> None:
    """anon=False and no credentials found: obstore's chain would ask the instance
    metadata service on each attempt of each request (aiozarr retries them: ~8 s before
    the error, against a refused port), so it is probed once here and a store it offers
    no role is refused at open. A setting the probe cannot judge (a container's
    credentials, IMDSv1, any option naming a key, token, credential or role) is left to
    obstore's chain, as before."""
    names = [name.lower().removeprefix("aws_") for name in options]
    if any(word in name for name in names for word in _SIGNING_WORDS) or _flag(
        os.environ.get("AWS_IMDSV1_FALLBACK")
    ):
        return
    endpoint = options.get("metadata_endpoint")
    if aws_config.has_instance_role(endpoint, anywhere=True) is not False:
        return  # a role, or a service too busy to say (on EC2: throttled), left to obstore
    asked = (
        "was not asked (AWS_EC2_METADATA_DISABLED=true)"
        if aws_config.metadata_disabled()
        else f"at {aws_config.metadata_url(endpoint)} lists no role (or did not answer in 1 s)"
    )
    raise StoreError(
        "anon=False asks for signed requests, and no AWS credentials were found: none in "
        "the storage options, the environment or the AWS profiles, and the instance "
        f"metadata service {asked}. Give credentials with {AWS_WAYS}; or anon=True to "
        "read a public bucket unsigned"
    )


# -- what to say when a server refuses ---------------------------------------------------


def refusal(store: Any, action: str, answer: str, said: str = "") -> str:
    """Why an object store refused a request (`answer`: "403 Forbidden, AccessDenied"),
    and how to give it credentials: whether the request went unsigned and, if signed,
    with which credentials. Where the server gave its own reason (`said`, more than
    "Access Denied": "the server is read-only ..."), that reason, and how it was signed."""
    from obstore.store import AzureStore, GCSStore, S3Store

    config = getattr(store, "config", None) or {}
    unsigned = bool(_flag(config.get("skip_signature")))
    if said:
        how = (
            "it went unsigned: no credentials were found"
            if unsigned
            else f"signed with {_s3_source(store, config)}"
            if isinstance(store, S3Store)
            else "signed"
        )
        return f"the server refused the request ({answer}): {said!r} ({how})"
    if isinstance(store, S3Store):
        if unsigned:
            return (
                f"the bucket refused an anonymous request ({answer}): it went unsigned, as "
                "no AWS credentials were found (or anon=True was given, which only public "
                f"buckets take). Give credentials with {AWS_WAYS}"
            )
        pays = _flag(config.get("request_payer"))
        payer = "" if pays else ", give requester_pays=True if the bucket bills the reader"
        return (
            f"the bucket refused the request signed with {_s3_source(store, config)} "
            f"({answer}): they may not {action} here. Check them{payer}, or give anon=True "
            "to read a public bucket without credentials"
        )
    if unsigned and isinstance(store, GCSStore | AzureStore):
        ways = (
            "GOOGLE_APPLICATION_CREDENTIALS or the storage option service_account_path"
            if isinstance(store, GCSStore)
            else "the storage options account_key or sas_token, or AZURE_STORAGE_ACCOUNT_KEY"
        )
        return (
            f"the server refused an anonymous request ({answer}): no credentials were "
            f"found, so it went unsigned. Give them with {ways}"
        )
    return f"the server refused the request ({answer}): the credentials given may not {action} here"


def fetch_failed(store: Any, url: str, message: str) -> str:
    """Why a store could not sign: no credentials were given or found, so obstore asked
    `url` (an instance metadata service, a container's credentials, STS) for them, and
    that failed (`message`). Not the bucket's answer."""
    from obstore.store import GCSStore, S3Store

    ways = (
        AWS_WAYS
        if isinstance(store, S3Store)
        else "GOOGLE_APPLICATION_CREDENTIALS or the storage option service_account_path"
        if isinstance(store, GCSStore)
        else "the storage options account_key or sas_token, or AZURE_STORAGE_ACCOUNT_KEY"
    )
    return (
        f"no credentials to sign with: none were given or found, so obstore asked {url} "
        f"(an instance role's, a container's or a web identity's) and that failed "
        f"({message}). Give credentials with {ways}; or anon=True to read a public "
        "bucket unsigned"
    )


def _s3_source(store: Any, config: dict[str, Any]) -> str:
    provider = getattr(store, "credential_provider", None)
    if provider is not None:
        return str(getattr(provider, "source", "")) or (
            f"the credentials of its credential_provider ({type(provider).__name__})"
        )
    if config.get("access_key_id"):
        return "the keys given in the storage options"
    if os.environ.get("AWS_ACCESS_KEY_ID"):
        return "the environment's keys (AWS_ACCESS_KEY_ID)"
    return "the credentials obstore found (a web identity, a container or an instance role)"
