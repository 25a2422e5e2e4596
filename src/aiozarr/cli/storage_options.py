"""Store settings from the command line: `--storage-option KEY=VALUE` pairs -> the
`storage_options` of a URL. Local paths and `memory://` take none (`storage.from_url`
refuses them too) but a local icechunk repository, which takes which snapshot to read
and where its virtual chunks may be read (`REPOSITORY_OPTIONS`): options given for one
only are refused by name, so a typo or an option meant for another URL is not silently
dropped."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from aiozarr.storage.references.icechunk import REF_OPTIONS, is_repository
from aiozarr.storage.references.reference_store import is_reference_source

__all__ = [
    "REPOSITORY_OPTIONS",
    "is_local",
    "options_for",
    "parse_storage_options",
    "takes_no_options",
    "transfer_storage_options",
]


#: The storage options a local icechunk repository takes.
REPOSITORY_OPTIONS = frozenset((*REF_OPTIONS, "allowed_targets", "target_options"))

#: The storage options a local reference file (kerchunk JSON or Parquet) takes.
REFERENCE_OPTIONS = frozenset(("allowed_targets", "target_options"))


def parse_storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """`["a=1", "b.c=true"]` -> `{"a": 1, "b": {"c": True}}`; a dot nests."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--storage-option {pair!r}: expected KEY=VALUE")
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        *parents, leaf = key.split(".")
        node = options
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    return options


def transfer_storage_options(
    args: argparse.Namespace,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The store settings of SRC and of DST. `--storage-option`s are SRC's and, unless
    `--dst-storage-option`s are given, DST's too; each goes to the remote ends only, and
    options that would reach no remote end are refused."""
    options = parse_storage_options(args.storage_option)
    if args.dst_storage_option is None:
        src = _taken(args.src, options, args.dst)
        dst = _taken(args.dst, options, args.src, destination=True)
        unused = set(options) - set(src or ()) - set(dst or ())
        if unused:
            raise ValueError(
                _refusal("--storage-option", {k: options[k] for k in unused}, [args.src, args.dst])
            )
        return src, dst
    dst_options = parse_storage_options(args.dst_storage_option)
    return (
        options_for(args.src, options),
        options_for(args.dst, dst_options, flag="--dst-storage-option"),
    )


def is_local(url: str) -> bool:
    """Whether `url` names a local path (no scheme, `file://` or a drive letter)."""
    scheme = urlsplit(url).scheme
    return scheme in ("", "file") or len(scheme) == 1


def takes_no_options(url: str) -> bool:
    """Whether `url` is a local path or `memory://`, which take no storage options."""
    return is_local(url) or url.startswith("memory://")


def options_for(
    url: str, options: dict[str, Any], *, flag: str = "--storage-option"
) -> dict[str, Any] | None:
    """The storage options for `url`; options given for a local path or `memory://` are
    refused (`ValueError` naming them, never their values: they may be credentials),
    but a local icechunk repository's (`REPOSITORY_OPTIONS`)."""
    refused = _refused(url, options)
    if refused:
        raise ValueError(_refusal(flag, {k: options[k] for k in refused}, [url]))
    return options or None


def _refused(url: str, options: dict[str, Any]) -> list[str]:
    """The names of `options` that `url` does not take."""
    if not takes_no_options(url):
        return []
    if is_local(url) and is_repository(url, options):
        return sorted(set(options) - REPOSITORY_OPTIONS)
    if is_local(url) and is_reference_source(url):
        return sorted(set(options) - REFERENCE_OPTIONS)
    return sorted(options)


def _taken(
    url: str, options: dict[str, Any], other: str, *, destination: bool = False
) -> dict[str, Any] | None:
    """What `url` takes of `options` given for both ends of a copy: a local icechunk
    repository its own (`REPOSITORY_OPTIONS`), which a remote `other` end is then not
    given; a remote URL the rest; another local path or `memory://` none, and so does a
    `destination` there (repositories and reference files are only read)."""
    if takes_no_options(url):
        if destination:
            return None
        refused = set(_refused(url, options))
        return {k: v for k, v in options.items() if k not in refused} or None
    # a local repository or reference file by its layout (options naming a ref make
    # `is_repository` true of any path): its own options are not this end's
    if is_local(other) and (is_repository(other) or is_reference_source(other)):
        return {k: v for k, v in options.items() if k not in REPOSITORY_OPTIONS} or None
    return options or None


def _refusal(flag: str, options: dict[str, Any], urls: Sequence[str]) -> str:
    names = ", ".join(sorted(options))
    where = " and ".join(repr(url) for url in urls)
    return (
        f"{flag} {names}: local paths take no storage options ({where}); remove it, "
        "or give it with a URL it applies to (s3://, gs://, az://, http(s)://)"
    )
