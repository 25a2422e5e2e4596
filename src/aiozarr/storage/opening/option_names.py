"""The storage option names a URL scheme takes, to name the one meant when an option is
misspelled (`-o endpont=...`: "did you mean 'endpoint'?").

obstore checks the names and says only which one is unknown; the names it takes are the
fields of its config types, which exist only in its type stubs (shipped with it), so they
are read from there, when a name was refused. Nothing is suggested when they cannot be
read.
"""

from __future__ import annotations

import ast
import difflib
import functools
from collections.abc import Iterable
from pathlib import Path

__all__ = ["closest_option"]

# URL scheme -> (obstore's stub file, its config type)
_CONFIGS = {
    "s3": ("_aws.pyi", "S3Config"),
    "gcs": ("_gcs.pyi", "GCSConfig"),
    "azure": ("_azure.pyi", "AzureConfig"),
}
_CLIENT = ("_client.pyi", "ClientConfig")


@functools.cache
def _fields(stub: str, name: str) -> frozenset[str]:
    """The fields of the TypedDict `name` in obstore's stub `stub` (none if unreadable)."""
    try:
        import obstore

        path = Path(obstore.__file__).parent / "_store" / stub
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ImportError):
        return frozenset()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return frozenset(
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            )
    return frozenset()


def closest_option(refused: str, kind: str, own: Iterable[str] = ()) -> str | None:
    """The option of a `kind` store ("s3", "gcs", "azure") spelled most like `refused`:
    obstore's store and client options, and `own` (aiozarr's and fsspec's spellings)."""
    names = set(own) | _fields(*_CLIENT)
    if kind in _CONFIGS:
        names |= _fields(*_CONFIGS[kind])
    found = difflib.get_close_matches(refused.lower(), sorted(names), n=1, cutoff=0.75)
    return found[0] if found else None
