"""mkdocs hooks: the reference pages that are generated from the source, so they cannot
drift from it.

A page asks for generated text with a marker line:

    <!-- aiozarr:include README.md -->     a file of the repository, its links made
                                           relative to docs/
    <!-- aiozarr:settings -->              every field of `aiozarr.config.Config`
    <!-- aiozarr:storage-options -->       every storage option, per URL scheme
    <!-- aiozarr:cli -->                   `aiozarr --help` and each command's help

After the build, every name in `aiozarr.__all__` and every class of `aiozarr.errors` must
have been rendered by a `::: identifier` line of some page: a public name left out of the
reference is a warning, which `mkdocs build --strict` turns into a failure.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import logging
import os
import re
import tokenize
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("mkdocs.hooks.aiozarr")

_MARKER = re.compile(r"^<!-- aiozarr:([a-z-]+)(?: (\S+))? -->$", re.MULTILINE)
_RENDERED = re.compile(r"^::: ([\w.]+)", re.MULTILINE)
_rendered: set[str] = set()


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace each marker line of a page with the text it asks for."""
    _rendered.update(_RENDERED.findall(markdown))
    return _MARKER.sub(lambda m: _generate(m.group(1), m.group(2), page), markdown)


def on_nav(nav: Any, files: Any, **_: Any) -> Any:
    """Every page of docs/decisions/ under "Decision log", those mkdocs.yml does not
    list (pages added since) after the listed ones, by name."""
    section = next((s for s in nav.items if getattr(s, "title", "") == "Decision log"), None)
    if section is None:
        return nav
    listed = {id(child) for child in section.children}
    for file in sorted(files.documentation_pages(), key=lambda f: f.src_uri):
        page = file.page
        if file.src_uri.startswith("decisions/") and page is not None and id(page) not in listed:
            page.parent = section
            section.children.append(page)
            nav.pages.append(page)
    return nav


def on_post_build(**_: Any) -> None:
    """Warn about public names that no page renders."""
    import aiozarr
    import aiozarr.errors

    wanted = {f"aiozarr.{name}" for name in aiozarr.__all__}
    wanted -= {"aiozarr.config", "aiozarr.errors"}  # pages of their own, checked below
    wanted |= {
        f"aiozarr.errors.{name}"
        for name, value in vars(aiozarr.errors).items()
        if isinstance(value, type) and issubclass(value, Exception | Warning)
        if value.__module__ == "aiozarr.errors"
    }
    shown = {name.replace("aiozarr.dask.", "aiozarr.") for name in _rendered}
    # a module rendered whole (`::: aiozarr.errors`) renders each of its public names
    missing = [n for n in wanted - shown if n.rpartition(".")[0] not in shown]
    for name in sorted(missing):
        log.warning("public name %s is not in the API reference (add a '::: %s' line)", name, name)


def _generate(kind: str, argument: str | None, page: Any) -> str:
    if kind == "include" and argument:
        return _include(argument)
    if kind == "settings":
        return settings_reference()
    if kind == "storage-options":
        return storage_options_reference()
    if kind == "cli":
        return cli_reference()
    log.warning("%s: unknown marker aiozarr:%s", page.file.src_path, kind)
    return ""


# -- included files ----------------------------------------------------------------------

_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")
#: Files of the repository that are pages of the site, by their page.
_PAGES = {
    "README.md": "index.md",
    "CONTRIBUTING.md": "contributing.md",
    "CHANGELOG.md": "changelog.md",
}


def _include(name: str) -> str:
    """A file of the repository, its relative links pointing where they point on the site."""
    text = (ROOT / name).read_text(encoding="utf-8")

    def relink(match: re.Match[str]) -> str:
        target, anchor = match.group(1), match.group(2) or ""
        if "://" in target or target.startswith("mailto:"):
            return match.group(0)
        if target in _PAGES:
            target = _PAGES[target]
        elif target.startswith("docs/"):
            target = target.removeprefix("docs/")
        return f"]({target}{anchor})"

    return _LINK.sub(relink, text)


# -- settings ----------------------------------------------------------------------------


def settings_reference() -> str:
    """A section per group of settings: each field's type, default and environment
    variable, then the comment that explains the group in `config.py`."""
    from aiozarr import config

    source = Path(config.__file__).read_text(encoding="utf-8")
    comments = _field_comments(source)
    fields = {f.name: f for f in dataclasses.fields(config.Config)}
    out = [
        "| setting | type | default | environment variable |",
        "|---|---|---|---|",
    ]
    for name, field in fields.items():
        kind = field.type if isinstance(field.type, str) else field.type.__name__
        default = _default_text(field.default)
        out.append(f"| [`{name}`](#{name}) | `{kind}` | `{default}` | `AIOZARR_{name.upper()}` |")
    out.append("")
    for group, comment in comments:
        out.append("### " + ", ".join(f"`{n}`" for n in group) + " { #" + group[0] + " }")
        out.append("")
        for name in group[1:]:  # the table links every name: give the others an anchor too
            out.append(f'<a id="{name}"></a>')
        out.append(comment or "")
        out.append("")
    return "\n".join(out)


def _default_text(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1024:
        for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
            if value % (1 << shift) == 0:
                return f"{value} ({value >> shift} {unit})"
    return repr(value)


def _field_comments(source: str) -> list[tuple[list[str], str]]:
    """The fields of `class Config`, grouped under the comment block above the first of
    them: [([field, ...], comment text), ...] in source order."""
    tree = ast.parse(source)
    config = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Config")
    lines = {}  # line number -> comment text
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            lines[token.start[0]] = token.string.lstrip("#").strip()
    groups: list[tuple[list[str], str]] = []
    for node in config.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        above, line = [], node.lineno - 1
        while line in lines:
            above.insert(0, lines[line])
            line -= 1
        if above or not groups:
            groups.append(([node.target.id], " ".join(above)))
        else:
            groups[-1][0].append(node.target.id)
    return groups


# -- storage options ---------------------------------------------------------------------

_STUB_CLASSES = {
    "S3Config": "_aws.pyi",
    "GCSConfig": "_gcs.pyi",
    "AzureConfig": "_azure.pyi",
    "ClientConfig": "_client.pyi",
}


#: aiozarr's own options, which every remote scheme but plain HTTP takes.
_OWN_OPTIONS = """\
aiozarr's own options, taken by `s3://`, `gs://` and `az://` URLs (`http(s)://` takes
`client_options` only):

| option | what it does |
|---|---|
| `anon` | `True`: sign nothing (public data); `False`: use obstore's credential sources even when none is given (an instance role). Without credentials in the options or the environment, requests are unsigned. |
| `client_options` | a dict of the HTTP client options below |
| `client_kwargs` | fsspec's spelling: a dict whose entries are taken as options |
| `credential_provider` | an object that gives credentials when asked (`aiozarr.storage.EnvironmentCredentials()`: each process reads its own `AWS_*` variables, so a pickled array carries no key) |
| `retry_config` | accepted, but obstore's retries are always off: aiozarr retries, as the `retry_*` [settings](settings.md) say |
| `allowed_targets`, `target_options` | kerchunk reference files and icechunk repositories only: which targets (virtual chunks) may be read, and the options each target gets |
| `branch`, `tag`, `snapshot` | icechunk repositories only: the snapshot to read (default: branch `main`); naming one opens the URL as a repository |
| `as_of` | icechunk repositories only (spec 2): the branch's snapshot newest at this time (a `datetime` or ISO 8601 text; UTC unless it says otherwise) |

[`from_url`](stores.md) says how credentials are found and lists any other option
aiozarr reads itself.

An option naming an endpoint (`endpoint`, `endpoint_url`, `aws_endpoint`, `base_url`,
...) must be an `http(s)://host[:port][/path]` URL; an `http://` endpoint turns on
`allow_http`. Option values never appear in messages, only their names.
"""  # noqa: E501 (table rows are one line each)

#: The schemes that take no obstore options.
_OTHER_SCHEMES = """\
## `http://`, `https://`: plain HTTP (read-only)

Only the client options above (`client_options={...}`; those marked *direct* may
also be given directly). A server
that cannot list serves arrays and groups with consolidated metadata, and arrays opened
by path.

## `file://` and plain paths, `memory://NAME`

No storage options. A local path given any is an error naming them; `memory://NAME`
(one in-memory store per name per process) ignores them, and the command line refuses
`-o` for either.

## Zip archives and kerchunk references

A path or URL ending in `.zip` opens a zip archive in the store of its parent, with
that store's options. A kerchunk reference file (`.json`, `.parq`, or a dict) takes
`allowed_targets` and `target_options` beside the options of the store that holds the
file. Over `http(s)://`, the reference file and its targets are read with redirects
checked before they are followed, and take the client options `default_headers`,
`user_agent`, `allow_http`, `allow_invalid_certificates`, `root_certificate` and
`proxy_url` (timeouts, pool settings and `http1_only` are accepted and unused: the
request policy's timeout bounds each request); any other is refused by name.

## Icechunk repositories

A directory or URL holding an icechunk repository (spec 1 or 2: found by its layout)
opens read-only with the options of the store that holds it, plus `branch`, `tag` or
`snapshot` and, for virtual chunks outside its own bucket or folder, `allowed_targets`
and `target_options`. A local repository takes these and no other option.
"""


def storage_options_reference() -> str:
    """Per scheme: aiozarr's own options and spellings, then obstore's, read from the
    installed obstore's type stubs (name, type and the first paragraph of each)."""
    from aiozarr.storage.opening import url

    stubs = {name: _typed_dict(name, file) for name, file in _STUB_CLASSES.items()}
    aliases = "\n".join(
        [f"| `{alias}` | `{target}` |" for alias, target in sorted(url._ALIASES.items())]
        + [
            f"| `{alias}` (`s3://`) | `{target}` |"
            for alias, target in sorted(url._S3_ALIASES.items())
        ]
    )
    client = _options_table(
        "HTTP client options (`client_options={...}`; those marked *direct* may also be "
        "given among the other options)",
        stubs["ClientConfig"],
        direct=url._CLIENT_KEYS,
    )
    s3 = (
        "With no `endpoint` option, the environment variables "
        + ", ".join(f"`{v}`" for v in url._ENDPOINT_ENV)
        + " name the server (MinIO, `aiozarr serve`). "
        + _credentials_text("s3")
        + " aiozarr also reads s3fs's `profile` (a profile of `~/.aws/credentials` and "
        "`~/.aws/config`, as `AWS_PROFILE` names one) and `use_ssl` (`False`: requests to "
        "AWS over http; an `endpoint` keeps its own scheme)."
    )
    sections = [
        ("Every remote scheme", _OWN_OPTIONS),
        ("", "fsspec's spellings (s3fs, gcsfs, adlfs) are read as obstore's:\n"),
        ("", f"| fsspec | obstore |\n|---|---|\n{aliases}\n"),
        ("", client),
        ("`s3://`, `s3a://`: Amazon S3 and S3-compatible servers", s3),
        ("", _options_table("S3 options", stubs["S3Config"])),
        ("`gs://`, `gcs://`: Google Cloud Storage", _credentials_text("gcs")),
        ("", _options_table("GCS options", stubs["GCSConfig"])),
        (
            "`az://`, `azure://`, `abfs://`, `abfss://`, `adl://`: Azure Blob Storage",
            _credentials_text("azure"),
        ),
        ("", _options_table("Azure options", stubs["AzureConfig"])),
        ("", _OTHER_SCHEMES),
    ]
    return "\n".join((f"## {title}\n\n" if title else "") + text + "\n" for title, text in sections)


def _credentials_text(kind: str) -> str:
    """Where a store of `kind` looks for credentials (`storage/opening/cloud_credentials.py`)."""
    from aiozarr.storage.opening import cloud_credentials

    if kind not in cloud_credentials.SIGNING:  # found another way: `from_url` says how
        return "Credentials are found as [`from_url`](stores.md) says."
    names = ", ".join(f"`{n}`" for n in sorted(cloud_credentials.SIGNING[kind]))
    prefixes = " or ".join(f"`{p}`" for p in cloud_credentials.PREFIXES[kind])
    return (
        f"Credentials: the options {names}, with or without the prefix {prefixes}, in any "
        "case, or the environment variables of those names with the prefix (upper case). "
        "With none, requests are unsigned (public data)."
    )


def _typed_dict(name: str, stub: str) -> list[tuple[str, str, str]]:
    """(field, type, first paragraph) of a TypedDict in obstore's stubs."""
    import obstore

    path = Path(obstore.__file__).parent / "_store" / stub
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    fields: list[tuple[str, str, str]] = []
    body = cls.body
    for i, node in enumerate(body):
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        doc = ""
        after = body[i + 1] if i + 1 < len(body) else None
        if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
            doc = str(after.value.value)
        fields.append((node.target.id, ast.unparse(node.annotation), _first_paragraph(doc)))
    return fields


def _first_paragraph(doc: str) -> str:
    text = doc.strip().split("\n\n", 1)[0]
    text = " ".join(text.split())
    text = re.sub(r"\[([^\]]+)\](\([^)]*\))?", r"\1", text)  # links need their targets
    return text.replace("|", "\\|")


def _options_table(title: str, fields: list[tuple[str, str, str]], direct: Any = None) -> str:
    rows = []
    for name, kind, doc in fields:
        mark = " *direct*" if direct is not None and name in direct else ""
        rows.append(f"| `{name}`{mark} | `{kind.replace(' | ', '` or `')}` | {doc} |")
    body = "\n".join(rows)
    return f"**{title}**\n\n| option | type | what it does |\n|---|---|---|\n{body}\n"


# -- the command line --------------------------------------------------------------------


def cli_reference() -> str:
    """`aiozarr --help`, then each command's `--help`, as the command prints them."""
    from aiozarr import cli

    blocks = [("aiozarr --help", _help_of(cli.top_parser()))]
    for name, module in cli.COMMANDS.items():
        blocks.append((f"aiozarr {name} --help", _help_of(module.build_parser())))
    out = []
    for command, text in blocks:
        title = command.removesuffix(" --help")
        out += [f"## `{title}`", "", "```console", f"$ {command}", text.rstrip(), "```", ""]
    return "\n".join(out)


def _help_of(parser: Any) -> str:
    with _columns(88):
        return parser.format_help()


@contextlib.contextmanager
def _columns(width: int) -> Any:
    """argparse wraps help to $COLUMNS: a fixed width keeps the page the same everywhere."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
