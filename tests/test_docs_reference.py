"""The docs site has a reference entry for every exported name and a nav entry for every
page (`mkdocs build --strict` fails on an omitted page: `validation` in mkdocs.yml)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# module -> names exported under another module's entry
ELSEWHERE = {"aiozarr": {"config", "to_dask", "from_dask"}}  # aiozarr.config.*, .dask.*
PUBLIC = ["aiozarr", "aiozarr.storage", "aiozarr.config", "aiozarr.dask", "aiozarr.xarray"]
# modules without __all__: their public functions and classes
CONFIG_NAMES = ["Config", "get", "set", "use", "process_settings"]


def _entries() -> set[str]:
    text = "\n".join(page.read_text() for page in (DOCS / "reference").glob("*.md"))
    return set(re.findall(r"^::: ([\w.]+)", text, flags=re.MULTILINE))


@pytest.mark.parametrize("module", PUBLIC)
def test_every_exported_name_has_a_reference_entry(module: str) -> None:
    names = getattr(importlib.import_module(module), "__all__", CONFIG_NAMES)
    entries = _entries()
    missing = [
        name
        for name in names
        if f"{module}.{name}" not in entries
        and module not in entries
        and name not in ELSEWHERE.get(module, set())
    ]
    assert missing == [], f"no `::: {module}.NAME` in docs/reference for {missing}"


def _nav_pages(nav: object) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return set().union(*(_nav_pages(item) for item in nav))
    if isinstance(nav, dict):
        return set().union(*(_nav_pages(value) for value in nav.values()))
    return set()


def test_every_page_is_in_the_nav() -> None:
    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert sorted(pages - _nav_pages(settings["nav"])) == []
    assert settings["validation"]["nav"]["omitted_files"] == "warn"
