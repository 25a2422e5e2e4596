"""What the AWS tools' own configuration says: the profiles of the shared files
(`~/.aws/credentials`, `~/.aws/config`, or where `AWS_SHARED_CREDENTIALS_FILE` /
`AWS_CONFIG_FILE` point) and whether this host is an EC2 instance with a role.

    profile = read_profile("analysis")     # None: no such profile in either file
    profile.keys                           # static keys, or None
    profile.needs_boto3                    # "role_arn", "sso_session", ... or ""

The files are read as botocore reads them: the config file's `[default]` and
`[profile NAME]` sections, the credentials file's `[NAME]` sections, the latter's values
winning. Static keys are read here; a profile that assumes a role, signs in with SSO or
runs a `credential_process` is left to boto3 (`credentials.ProfileCredentials`).
"""

from __future__ import annotations

import configparser
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from aiozarr.errors import StoreError

__all__ = [
    "Profile",
    "config_file",
    "credentials_file",
    "files_state",
    "has_instance_role",
    "read_profile",
]

# Profile settings whose credentials botocore fetches (STS, SSO, a process, a sign-in
# session): aiozarr hands such profiles to boto3, in the order botocore tries them.
_BOTO3_SETTINGS = (
    "role_arn",
    "web_identity_token_file",
    "sso_session",
    "sso_start_url",
    "sso_account_id",
    "login_session",
)
_PROCESS = "credential_process"
# The instance metadata service (IMDSv2), as obstore asks it.
_IMDS = "http://169.254.169.254"
_IMDS_TIMEOUT_S = 1.0
# Files that say a Linux host is an EC2 instance (no request needed to find out).
_EC2_MARKS = (
    ("/sys/devices/virtual/dmi/id/sys_vendor", "Amazon EC2"),
    ("/sys/devices/virtual/dmi/id/board_asset_tag", "i-"),
    ("/sys/hypervisor/uuid", "ec2"),
)


@dataclass(frozen=True)
class Profile:
    """A profile of the AWS shared files."""

    name: str
    #: Its settings, the credentials file's over the config file's.
    settings: dict[str, str]
    #: `(access key id, secret key, session token or None)` when the profile holds
    #: static keys that are its credentials (as botocore would pick them), else None.
    keys: tuple[str, str, str | None] | None
    #: The setting that makes boto3 necessary ("role_arn", "credential_process", ...),
    #: or "" when the profile needs none.
    needs_boto3: str

    @property
    def has_credentials(self) -> bool:
        """Whether the profile says where its credentials come from."""
        return self.keys is not None or bool(self.needs_boto3)

    @property
    def region(self) -> str | None:
        """The profile's `region`, if it names one."""
        return self.settings.get("region") or None


def credentials_file() -> Path:
    """The shared credentials file, as the AWS tools find it."""
    return Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials").expanduser()


def config_file() -> Path:
    """The shared config file, as the AWS tools find it."""
    return Path(os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config").expanduser()


def files_state() -> tuple[tuple[str, int, int], ...]:
    """The two files' paths, modification times and sizes (0 when missing): what a store
    chosen from them depends on."""
    state = []
    for path in (credentials_file(), config_file()):
        try:
            stat = path.stat()
        except OSError:
            state.append((str(path), 0, 0))
        else:
            state.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(state)


def read_profile(name: str) -> Profile | None:
    """The profile `name` of the shared files, or None when neither file has it."""
    config = _sections(config_file(), in_config=True).get(name)
    stored = _sections(credentials_file(), in_config=False).get(name)
    if config is None and stored is None:
        return None
    config, stored = config or {}, stored or {}
    settings = {**config, **stored}
    role = next((s for s in _BOTO3_SETTINGS if settings.get(s)), "")
    if role:
        return Profile(name, settings, None, role)
    keys = _keys(stored)
    if keys is not None:
        return Profile(name, settings, keys, "")
    if settings.get(_PROCESS):
        return Profile(name, settings, None, _PROCESS)
    return Profile(name, settings, _keys(config), "")


def _keys(section: dict[str, str]) -> tuple[str, str, str | None] | None:
    key, secret = section.get("aws_access_key_id"), section.get("aws_secret_access_key")
    if not key or not secret:
        return None
    token = section.get("aws_session_token") or section.get("aws_security_token") or None
    return key, secret, token


def _sections(path: Path, *, in_config: bool) -> dict[str, dict[str, str]]:
    """The profiles of one file by name; {} when it is missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:  # most machines: asked before a parser is made
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise _unreadable(path, error) from None
    parser = configparser.RawConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as error:
        raise _unreadable(path, error) from None
    profiles: dict[str, dict[str, str]] = {}
    for section in parser.sections():
        name = section.strip()
        if in_config:
            kind, _, rest = name.partition(" ")
            if name == "default":
                rest = "default"
            elif kind != "profile" or not rest.strip():
                continue  # [sso-session x], [services x]: not profiles
            name = rest.strip()
        values = {k: v.strip() for k, v in parser.items(section)}
        profiles.setdefault(name, {}).update(values)
    return profiles


def _unreadable(path: Path, error: Exception) -> StoreError:
    return StoreError(f"cannot read the AWS {path.name} file {str(path)!r}: {_problem(error)}")


def _problem(error: Exception) -> str:
    """What is wrong with a file, without quoting its lines (they may hold keys)."""
    if isinstance(error, configparser.MissingSectionHeaderError):
        return f"line {error.lineno} comes before any [section]"
    if isinstance(error, configparser.ParsingError):
        lines = ", ".join(str(number) for number, _ in error.errors)
        return f"lines it cannot parse ({lines})"
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return type(error).__name__


# -- the instance role ------------------------------------------------------------------


def metadata_disabled() -> bool:
    """Whether `AWS_EC2_METADATA_DISABLED=true` turns the instance metadata service off."""
    return os.environ.get("AWS_EC2_METADATA_DISABLED", "").strip().lower() == "true"


def metadata_url(metadata_endpoint: str | None = None) -> str:
    """The instance metadata service asked: the option's, `AWS_METADATA_ENDPOINT`'s, else
    EC2's own."""
    return (metadata_endpoint or os.environ.get("AWS_METADATA_ENDPOINT") or _IMDS).rstrip("/")


def has_instance_role(
    metadata_endpoint: str | None = None, *, anywhere: bool = False
) -> bool | None:
    """Whether the instance metadata service offers a role's credentials here (None: it
    answered that it is busy, so it is there but could not say).

    Asked only on a host that says it is an EC2 instance, where a metadata endpoint is
    named (`metadata_endpoint`, `AWS_METADATA_ENDPOINT`), or `anywhere` (signing is
    required: one probe, 1 s timeouts, costs less than obstore's chain asking on every
    attempt); elsewhere it would cost a connect timeout for nothing.
    `AWS_EC2_METADATA_DISABLED=true` turns it off, as for the AWS tools. Asked when a
    store is built (`from_url` keeps the stores it built); obstore itself then fetches
    and renews the role's credentials.
    """
    if metadata_disabled():
        return False
    named = metadata_endpoint or os.environ.get("AWS_METADATA_ENDPOINT")
    if not named and not anywhere and not _on_ec2():
        return False
    return _role_listed(metadata_url(metadata_endpoint))


def _on_ec2() -> bool:
    for path, start in _EC2_MARKS:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if text.lower().startswith(start.lower()):
            return True
    return False


def _role_listed(endpoint: str) -> bool | None:
    """Whether IMDSv2 at `endpoint` lists a role: a session token, then the role names;
    None where it answered that it is busy (429, 5xx: an EC2 service throttled for a
    moment, which a later request may find well)."""
    try:
        token_request = urllib.request.Request(
            f"{endpoint}/latest/api/token",
            method="PUT",
            headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"},
        )
        with urllib.request.urlopen(token_request, timeout=_IMDS_TIMEOUT_S) as answer:
            token = answer.read().decode("ascii", errors="replace").strip()
        roles_request = urllib.request.Request(
            f"{endpoint}/latest/meta-data/iam/security-credentials/",
            headers={"X-aws-ec2-metadata-token": token},
        )
        with urllib.request.urlopen(roles_request, timeout=_IMDS_TIMEOUT_S) as answer:
            return bool(answer.read().strip())
    except urllib.error.HTTPError as error:
        return None if error.code == 429 or error.code >= 500 else False
    except (OSError, urllib.error.URLError, ValueError):
        return False
