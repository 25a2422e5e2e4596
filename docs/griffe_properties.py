"""A griffe extension for the docs site: `name = property(getter, doc="...")` class
attributes (the sync facade's one-line forwards) are documented as properties with
that `doc`, which static analysis would otherwise leave blank."""

from __future__ import annotations

import ast
from typing import Any

import griffe


class PropertyDocs(griffe.Extension):
    def on_attribute_instance(
        self, *, node: ast.AST | Any, attr: griffe.Attribute, **_: Any
    ) -> None:
        value = getattr(node, "value", None)
        if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Name):
            return
        if value.func.id != "property":
            return
        for keyword in value.keywords:
            if keyword.arg == "doc" and isinstance(keyword.value, ast.Constant):
                attr.docstring = griffe.Docstring(str(keyword.value.value), parent=attr)
                attr.labels = {"property"}
                attr.value = None  # the lambda says nothing to a reader
