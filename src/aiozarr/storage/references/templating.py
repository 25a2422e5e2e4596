"""Kerchunk's `templates` and `gen` items (reference spec version 1), rendered.

A reference file's `templates` name strings its URLs use as `{{name}}`; a template
holding `{{...}}` itself is a jinja template, called from a URL with its variables
(`{{f(c='text')}}`). A `gen` item makes many references from one:

    {"key": "x/{{i}}.{{j}}", "url": "{{u}}/part{{i}}.bin",
     "offset": "{{ (i + 1) * 1000 }}", "length": "1000",
     "dimensions": {"i": {"stop": 5}, "j": [0, 2]}}

one reference per combination of the dimensions' values (`{start, stop, step}` as
Python's `range`, start 0 and step 1 unless given, or a list of values), `key`, `url`,
`offset` and `length` rendered with the dimensions' values and the templates (`offset`
and `length` both or neither: neither is the whole object). Generated keys are added
after `refs`, a later one replacing an earlier one of the same key, as fsspec's
`ReferenceFileSystem` does.

Plain substitution needs nothing: `{{name}}` of a template that holds no `{{` or of a
dimension is replaced by its value. Anything else in `{{...}}` is a jinja expression,
evaluated in jinja2's `ImmutableSandboxedEnvironment` (an optional dependency, in the
`references` extra; `UnsupportedError` naming the package where it is missing), further
narrowed for untrusted files: no attribute or method of any value, no globals, a few
filters (`_FILTERS`), calls of the file's own templates only, `*`, `**` and `%` refused
where their result would exceed `MAX_RENDERED_CHARS` characters or `_MAX_INT_BITS` bits,
every rendered string and every expression at most `MAX_RENDERED_CHARS`, no `{% ... %}`
statements (no loops), at most `MAX_EXPRESSIONS` distinct expressions compiled per file
(a millisecond each), and at most `MAX_EVALUATED_CHARS` characters of expressions
evaluated per file, counted at each evaluation (a template called counts its own). A
name neither a dimension nor a template is a `MetadataError` in a `gen` item; in `refs`
an unknown `{{name}}` stays as written, as before.

A file generates at most `MAX_GENERATED_KEYS` keys in all: the count is the product of
the dimensions' lengths (a `range`'s length is known without making it), checked for
every item before any is rendered, so `{"stop": 10**12}` is refused at once.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import re
from collections.abc import Iterator, Mapping
from typing import Any

from aiozarr.errors import MetadataError, UnsupportedError

__all__ = [
    "MAX_EVALUATED_CHARS",
    "MAX_EXPRESSIONS",
    "MAX_GENERATED_KEYS",
    "MAX_RENDERED_CHARS",
    "Templates",
    "generate",
]

#: Keys the `gen` items of one reference file may make, in all (each about 300 bytes in memory).
MAX_GENERATED_KEYS = 1_000_000
#: Characters a rendered key, URL, offset or length (or a template called) may hold.
MAX_RENDERED_CHARS = 4096
#: Distinct jinja expressions (templates, `gen` fields, expressions in refs) of one file.
MAX_EXPRESSIONS = 10_000
#: Characters of jinja expressions one file may have evaluated, counted per evaluation
#: (about 0.1 us each: a 24-character offset for each of 1,000,000 keys is 2.4e7).
MAX_EVALUATED_CHARS = 100_000_000
_MAX_INT_BITS = 4096
_FIELDS = ("key", "url", "offset", "length")
_FILTERS = ("abs", "float", "int", "lower", "string", "trim", "upper")
_TEMPLATE = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
# A %-format's conversion spec: its width and precision (a `*` takes them from the args).
_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d*))?")


class _Refused(Exception):
    """Why a template cannot be rendered (made a `MetadataError` naming the item)."""


class Templates:
    """The `templates` of reference file `where`: plain strings, and jinja templates
    (values holding `{{`) called as functions."""

    def __init__(self, raw: Mapping[str, Any], where: str) -> None:
        self._where = where
        self.expressions = _Expressions(where)
        self.plain: dict[str, str] = {}
        self.functions: dict[str, _Function] = {}
        for name, value in raw.items():
            name, value = str(name).strip(), str(value)
            if "{{" in value or "{%" in value:
                self.functions[name] = _Function(value, self.expressions)
            else:
                self.plain[name] = value

    def __bool__(self) -> bool:
        return bool(self.plain or self.functions)

    def url(self, url: str, key: str) -> str:
        """Reference URL `url` of `key` with its templates filled in: a plain one
        substituted, an unknown name left as written, an expression (a call of a jinja
        template) evaluated where the file has jinja templates."""

        def fill(match: re.Match[str]) -> str:
            name = match[1]
            if name in self.plain:
                return self.plain[name]
            if name in self.functions:
                return str(self.functions[name])
            if not self.functions or name.isidentifier():  # unknown: stays as written
                return match[0]
            return self.expressions.render(match[0], {**self.plain, **self.functions})

        try:
            return _TEMPLATE.sub(fill, url)
        except _Refused as error:
            raise MetadataError(
                f"{self._where}: the URL {_shown(url)} of {key!r} cannot be rendered: {error}"
            ) from None


class _Function:
    """A template holding jinja: called with its variables, `str()` with none."""

    def __init__(self, text: str, expressions: _Expressions) -> None:
        self.text = text
        self._expressions = expressions

    def __call__(self, **variables: Any) -> str:
        return self._expressions.render(self.text, variables)

    def __str__(self) -> str:
        return self()


class _Expressions:
    """The jinja expressions of one reference file, each compiled once, at most
    `MAX_EXPRESSIONS` of them (compiling one takes about a millisecond)."""

    def __init__(self, where: str) -> None:
        self._where = where
        self._compiled: dict[str, Any] = {}
        self._evaluated = 0

    def render(self, text: str, variables: Mapping[str, Any]) -> str:
        """`text` with every `{{...}}` filled from `variables`: by substitution where
        each names one, else by the sandboxed jinja environment. Raises `_Refused`."""
        names = _plain_names(text)
        simple = names is not None and all(
            n in variables and not isinstance(variables[n], _Function) for n in names
        )
        out = _TEMPLATE.sub(lambda m: str(variables[m[1]]), text) if simple else None
        if out is None:
            out = self._jinja(text, variables)
        if len(out) > MAX_RENDERED_CHARS:
            raise _Refused(f"it renders to {len(out)} characters, over {MAX_RENDERED_CHARS}")
        return out

    def _jinja(self, text: str, variables: Mapping[str, Any]) -> str:
        if "{%" in text:
            raise _Refused("'{% ... %}' statements are not evaluated, only '{{ ... }}'")
        if len(text) > MAX_RENDERED_CHARS:
            raise _Refused(f"an expression of {len(text)} characters, over {MAX_RENDERED_CHARS}")
        environment = _environment()  # UnsupportedError where jinja2 is missing
        from jinja2 import TemplateError

        self._evaluated += len(text)  # the work, metered: a call of a template counts too
        if self._evaluated > MAX_EVALUATED_CHARS:
            raise UnsupportedError(
                f"{self._where}: its expressions are longer than {MAX_EVALUATED_CHARS} "
                "characters in all, counted each time one is evaluated, the most evaluated "
                "for one reference file"
            )

        try:
            template = self._compiled.get(text)
            if template is None:
                if len(self._compiled) >= MAX_EXPRESSIONS:
                    raise UnsupportedError(
                        f"{self._where}: its templates and 'gen' items hold more than "
                        f"{MAX_EXPRESSIONS} distinct expressions, the most evaluated for "
                        "one reference file"
                    )
                template = self._compiled[text] = environment.from_string(text)
            return template.render(variables)
        except (_Refused, UnsupportedError):
            raise
        except (TemplateError, ArithmeticError, TypeError, ValueError, LookupError) as error:
            raise _Refused(f"{type(error).__name__}: {error}") from None
        except RecursionError:
            raise _Refused("it is nested too deeply") from None


@functools.cache
def _environment() -> Any:
    """The sandbox templates are evaluated in (jinja2's, narrowed further)."""
    try:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
    except ImportError:
        raise UnsupportedError(
            "kerchunk references whose templates or 'gen' items hold expressions need "
            "jinja2: pip install 'aiozarr[references]'"
        ) from None

    class Sandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%"})

        def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
            return False  # no methods or attributes: the values are numbers and text

        def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(obj, _Function):
                raise SecurityError(f"only the file's templates may be called, not {obj!r}")
            return obj(*args, **kwargs)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return super().call_binop(context, operator, left, right)

    sandbox = Sandbox(undefined=StrictUndefined, autoescape=False, cache_size=0)
    sandbox.globals.clear()
    sandbox.filters = {name: sandbox.filters[name] for name in _FILTERS}
    return sandbox


def _check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse `left operator right` where its result would be too large to make."""
    ints = isinstance(left, int) and isinstance(right, int)
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            sequence = isinstance(seq, str | list | tuple) and isinstance(times, int)
            if sequence and len(seq) * times > MAX_RENDERED_CHARS:
                raise _Refused(f"a repetition of {len(seq) * times} items")
        if ints and left.bit_length() + right.bit_length() > _MAX_INT_BITS:
            raise _Refused(f"a product over {_MAX_INT_BITS} bits")
    elif operator == "**" and ints and right > 0:
        if max(left.bit_length(), 1) * right > _MAX_INT_BITS:
            raise _Refused(f"a power over {_MAX_INT_BITS} bits")
    elif operator == "%" and isinstance(left, str):
        for width, precision in _PERCENT.findall(left):
            for number in (width, precision):
                if number == "*" or (number and int(number) > MAX_RENDERED_CHARS):
                    raise _Refused(f"a %-format width or precision {number!r}")


def generate(gen: Any, templates: Templates, where: str) -> Iterator[tuple[str, list[Any]]]:
    """(key, reference) of every key the `gen` items make, one at a time, once every
    item is checked and the keys they make counted (`MetadataError` for a malformed
    item, `UnsupportedError` for over `MAX_GENERATED_KEYS` keys)."""
    if not isinstance(gen, list):
        raise MetadataError(f"{where}: 'gen' must be a list of items, got {type(gen).__name__}")
    items = [_checked(item, i, templates, where) for i, item in enumerate(gen)]
    total = sum(math.prod(len(values) for values in dims.values()) for _, dims in items)
    if total > MAX_GENERATED_KEYS:
        raise UnsupportedError(
            f"{where}: its 'gen' items make {total} keys, over the {MAX_GENERATED_KEYS} a "
            "reference file may generate; none was made"
        )
    for i, (item, dims) in enumerate(items):
        names = list(dims)
        fields = {f: _formatted(item[f], names, templates) for f in _FIELDS if f in item}
        for combination in itertools.product(*dims.values()):
            values = _rendered(fields, names, combination, templates, f"{where}: 'gen' item {i}")
            reference = [values["url"]]
            for field in ("offset", "length"):
                if field in values:
                    reference.append(_integer(values, field, f"{where}: 'gen' item {i}"))
            yield values["key"], reference


def _formatted(text: str | int, names: list[str], templates: Templates) -> tuple[Any, Any]:
    """(`text`, a `str.format` string that renders it from the dimensions' values in the
    order of `names`, the plain templates filled in), or (`text`, None) where it needs
    jinja."""
    if isinstance(text, int):
        return text, str(text)
    if _plain_names(text) is None:
        return text, None
    pieces, end = [], 0
    for match in _TEMPLATE.finditer(text):
        pieces.append(text[end : match.start()].replace("{", "{{").replace("}", "}}"))
        name, end = match[1], match.end()
        if name in names:
            pieces.append(f"{{{names.index(name)}}}")
        elif name in templates.plain:
            pieces.append(templates.plain[name].replace("{", "{{").replace("}", "}}"))
        else:
            return text, None
    pieces.append(text[end:].replace("{", "{{").replace("}", "}}"))
    return text, "".join(pieces)


def _plain_names(text: str) -> list[str] | None:
    """The names of the `{{name}}` in `text`, or None where any other jinja syntax is
    in it (a `{{` the names do not close, `{%`, `{#`): it needs jinja."""
    names, end = [], 0
    for match in [*_TEMPLATE.finditer(text), None]:
        literal = text[end : match.start() if match else len(text)]
        if "{{" in literal or "{%" in literal or "{#" in literal:
            return None
        if match:
            names.append(match[1])
            end = match.end()
    return names


def _rendered(
    fields: Mapping[str, tuple[Any, Any]],
    names: list[str],
    combination: tuple[Any, ...],
    templates: Templates,
    named: str,
) -> dict[str, str]:
    """Each field of a `gen` item rendered for one combination of its dimensions."""
    values: dict[str, str] = {}
    variables: dict[str, Any] | None = None
    for field, (text, simple) in fields.items():
        try:
            if simple is not None:
                out = simple.format(*combination)
                if len(out) > MAX_RENDERED_CHARS:
                    raise _Refused(
                        f"it renders to {len(out)} characters, over {MAX_RENDERED_CHARS}"
                    )
            else:
                if variables is None:
                    variables = {**templates.plain, **templates.functions}
                    variables.update(zip(names, combination, strict=True))
                out = templates.expressions.render(text, variables)
        except _Refused as error:
            shown = dict(zip(names, combination, strict=True))
            raise MetadataError(
                f"{named}: its {field} {_shown(text)} cannot be rendered for {shown}: {error}"
            ) from None
        values[field] = out
    return values


def _integer(values: Mapping[str, str], field: str, named: str) -> int:
    """Rendered field `field` (offset or length) as an integer of at least 0."""
    try:
        number = int(values[field].strip())
    except ValueError:
        number = -1
    if number < 0:
        raise MetadataError(
            f"{named}: its {field} renders to {values[field]!r} for key {values['key']!r}, "
            "not an integer of at least 0"
        )
    return number


def _checked(item: Any, i: int, templates: Templates, where: str) -> Any:
    """(`gen` item `item`, its dimensions' values), or `MetadataError` naming it."""
    named = f"{where}: 'gen' item {i}"
    if not isinstance(item, Mapping):
        raise MetadataError(f"{named} is not an object: {item!r}"[:300])
    for field in ("key", "url", "dimensions"):
        if field not in item:
            raise MetadataError(f"{named} has no {field!r}, which every item has")
    for field in [f for f in ("key", "url", "offset", "length") if f in item]:
        text = item[field]
        integer = field in ("offset", "length") and isinstance(text, int)
        if isinstance(text, bool) or (not integer and (not isinstance(text, str) or not text)):
            raise MetadataError(f"{named}: its {field} must be a non-empty string, got {text!r}")
    if ("offset" in item) != ("length" in item):
        raise MetadataError(f"{named} has an offset or a length alone: give both or neither")
    dims = item["dimensions"]
    if not isinstance(dims, Mapping) or not dims:
        raise MetadataError(
            f"{named}: its dimensions must be an object of one or more "
            f"{{name: {{start, stop, step}} or [values]}}, got {dims!r}"[:400]
        )
    clash = sorted(set(dims) & (set(templates.plain) | set(templates.functions)))
    if clash:
        raise MetadataError(f"{named}: dimension {clash[0]!r} is also the name of a template")
    return item, {str(name): _values(name, spec, named) for name, spec in dims.items()}


def _values(name: str, spec: Any, named: str) -> Any:
    """The values of dimension `name`: a `range` (never made into a list) or a list."""
    if isinstance(spec, list):
        if not spec or not all(_scalar(v) for v in spec):
            raise MetadataError(
                f"{named}: dimension {name!r} must list one or more numbers or strings, "
                f"got {spec!r}"[:400]
            )
        return spec
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"start", "stop", "step"})
        bounds = [spec.get("start", 0), spec.get("stop"), spec.get("step", 1)]
        integers = all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
        if not unknown and integers and bounds[2] != 0:
            return range(*bounds)
    raise MetadataError(
        f"{named}: dimension {name!r} must be {{'start': int, 'stop': int, 'step': int}} "
        f"(stop required, step not 0) or a list of values, got {spec!r}"[:400]
    )


def _shown(text: Any) -> str:
    """`text` for a message: its repr, cut to 200 characters."""
    shown = repr(text)
    return shown if len(shown) <= 200 else f"{shown[:200]}...({len(text)} characters)"


def _scalar(value: Any) -> bool:
    return isinstance(value, str | numbers.Real) and not isinstance(value, bool)
