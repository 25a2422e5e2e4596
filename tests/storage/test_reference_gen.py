"""Kerchunk `gen` items (reference spec version 1): keys generated over dimensions read
as the same references written out one by one, and as fsspec's `reference://` reads
them; malformed items, unsafe expressions and absurd counts refused, naming the item."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError, ReferenceTargetError, UnsupportedError
from aiozarr.storage.references import templating
from aiozarr.storage.references.reference_store import ReferenceStore, is_reference_source
from aiozarr.storage.references.templating import MAX_GENERATED_KEYS

FILES, ROWS, CHUNK = 3, 4, 25  # part{f}.bin: ROWS * CHUNK int32 of file f, one row each
ZARRAY = {
    "shape": [FILES, ROWS * CHUNK],
    "chunks": [1, CHUNK],
    "dtype": "<i4",
    "fill_value": None,
    "order": "C",
    "filters": None,
    "compressor": None,
    "zarr_format": 2,
}
META = {".zgroup": '{"zarr_format":2}', "x/.zarray": json.dumps(ZARRAY)}


def _data(directory: Path) -> np.ndarray:
    """Write the part files; the array they hold."""
    values = np.arange(FILES * ROWS * CHUNK, dtype="<i4").reshape(FILES, -1)
    for f in range(FILES):
        # a 16-byte header before the values: offsets are (j * CHUNK + 4) * 4
        np.concatenate([np.full(4, -1, "<i4"), values[f]]).tofile(directory / f"part{f}.bin")
    return values


def _gen_doc(directory: Path) -> dict[str, Any]:
    return {
        "version": 1,
        "templates": {"u": f"{directory}/part", "name": "{{stem}}.bin"},
        "refs": dict(META),
        "gen": [
            {
                "key": "x/{{f}}.{{j}}",
                "url": "{{ name(stem=u ~ f) }}",
                "offset": "{{ (j * 25 + 4) * 4 }}",
                "length": "100",
                "dimensions": {"f": [0, 2], "j": {"stop": ROWS}},
            },
            {  # file 1 by plain substitution (no expression), counting down
                "key": "x/1.{{j}}",
                "url": "{{u}}1.bin",
                "offset": "{{off}}",
                "length": "100",
                "dimensions": {"j": {"start": 3, "stop": -1, "step": -1}, "off": [0]},
            },
        ],
    }


def _literal_doc(directory: Path) -> dict[str, Any]:
    """The same references as `_gen_doc`'s, written out (file 1's by plain offsets)."""
    refs: dict[str, Any] = dict(META)
    for f in (0, 2):
        for j in range(ROWS):
            refs[f"x/{f}.{j}"] = [f"{directory}/part{f}.bin", (j * 25 + 4) * 4, 100]
    for j in range(ROWS):
        refs[f"x/1.{j}"] = [f"{directory}/part1.bin", 0, 100]
    return {"version": 1, "refs": refs}


def _write(directory: Path, doc: Any, name: str = "refs.json") -> str:
    path = directory / name
    path.write_text(json.dumps(doc))
    return str(path)


async def test_gen_reads_as_its_references_written_out(tmp_path: Path) -> None:
    values = _data(tmp_path)
    generated = aiozarr.open_group(_write(tmp_path, _gen_doc(tmp_path)), mode="r")["x"][:]
    literal = _write(tmp_path, _literal_doc(tmp_path), "literal.json")
    np.testing.assert_array_equal(generated, aiozarr.open_group(literal, mode="r")["x"][:])
    np.testing.assert_array_equal(generated[[0, 2]], values[[0, 2]])
    header = np.full(4, -1, "<i4")  # file 1: every chunk is its first 100 bytes
    np.testing.assert_array_equal(generated[1], np.tile(np.r_[header, values[1, :21]], ROWS))
    store = ReferenceStore(str(tmp_path / "refs.json"))
    assert sorted([k async for k in store.list_prefix("x/")]) == sorted(
        k for k in _literal_doc(tmp_path)["refs"] if k.startswith("x/")
    )


async def test_gen_reads_as_fsspec_reads_it(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    zarr = pytest.importorskip("zarr")
    pytest.importorskip("jinja2")
    _data(tmp_path)
    path = _write(tmp_path, _gen_doc(tmp_path))
    fs = fsspec.filesystem("reference", fo=path, simple_templates=False)
    theirs = zarr.open_group(fs.get_mapper(""), mode="r", zarr_format=2)["x"][:]
    np.testing.assert_array_equal(aiozarr.open_group(path, mode="r")["x"][:], theirs)


async def test_the_specs_example(tmp_path: Path) -> None:
    """The spec's example, its URLs local: `gen_key{i}` is 1000 bytes at (i + 1) * 1000,
    `key3` calls template `f` with its variable."""
    pytest.importorskip("jinja2")
    data = bytes(range(256)) * 24
    (tmp_path / "path_0").write_bytes(data)
    (tmp_path / "text").write_bytes(data)
    doc = {
        "version": 1,
        "templates": {"u": f"{tmp_path}/path", "f": f"{tmp_path}/{{{{c}}}}"},
        "gen": [
            {
                "key": "gen_key{{i}}",
                "url": "{{u}}_0",
                "offset": "{{(i + 1) * 1000}}",
                "length": "1000",
                "dimensions": {"i": {"stop": 5}},
            }
        ],
        "refs": {"key0": "data", "key3": ["{{f(c='text')}}", 10, 100]},
    }
    store = ReferenceStore(_write(tmp_path, doc))
    assert bytes(await store.get("key0")) == b"data"
    assert bytes(await store.get("key3")) == data[10:110]
    for i in range(5):
        assert bytes(await store.get(f"gen_key{i}")) == data[(i + 1) * 1000 : (i + 2) * 1000]
    assert await store.get("gen_key5") is None


async def test_a_gen_item_without_offset_is_whole_objects_and_replaces_refs(
    tmp_path: Path,
) -> None:
    for name in "ab":
        (tmp_path / f"{name}.bin").write_bytes(name.encode() * 10)
    doc = {
        "version": 1,
        "refs": {"k/a": "inline, replaced"},
        "gen": [{"key": "k/{{n}}", "url": "{{n}}.bin", "dimensions": {"n": ["a", "b"]}}],
    }
    store = ReferenceStore(_write(tmp_path, doc))
    assert [bytes(await store.get(f"k/{n}")) for n in "ab"] == [b"a" * 10, b"b" * 10]


@pytest.mark.parametrize(
    "dimensions",
    [
        {"i": {"stop": 10**12}},
        {"i": {"stop": 1001}, "j": {"stop": 1000}},  # 1,001,000: just over
        {"i": {"start": -(10**15), "stop": 10**15, "step": 3}, "j": [1, 2]},
    ],
)
def test_too_many_keys_are_refused_before_any_is_made(
    tmp_path: Path, dimensions: dict[str, Any]
) -> None:
    doc = {"version": 1, "gen": [{"key": "k{{i}}", "url": "a.bin", "dimensions": dimensions}]}
    with pytest.raises(UnsupportedError, match=rf"keys, over the {MAX_GENERATED_KEYS}"):
        ReferenceStore(doc)
    two = {"key": "k{{i}}", "url": "a.bin", "dimensions": {"i": {"stop": 600_000}}}
    with pytest.raises(UnsupportedError, match=r"make 1200000 keys"):  # in all, not each
        ReferenceStore({"version": 1, "gen": [two, two]})


def test_generated_targets_are_checked_as_written_ones(tmp_path: Path) -> None:
    (tmp_path / "inside").mkdir()
    doc = {
        "version": 1,
        "gen": [
            {
                "key": "k{{i}}",
                "url": "{{ ['a.bin', '../outside.bin'][i] }}",
                "dimensions": {"i": [0, 1]},
            }
        ],
    }
    if "jinja2" not in sys.modules:
        pytest.importorskip("jinja2")
    with pytest.raises(ReferenceTargetError, match=r"outside\.bin.*for 'k1'"):
        aiozarr.open_group(_write(tmp_path / "inside", doc), mode="r")
    doc["gen"][0]["url"] = "s3://elsewhere/{{i}}.bin"
    with pytest.raises(ReferenceTargetError, match=r"s3://elsewhere/0\.bin.*for 'k0'"):
        aiozarr.open_group(_write(tmp_path / "inside", doc), mode="r")


def _item(**fields: Any) -> dict[str, Any]:
    item = {"key": "k{{i}}", "url": "a.bin", "dimensions": {"i": {"stop": 2}}}
    item.update(fields)
    return {k: v for k, v in item.items() if v is not None}


MALFORMED = [
    (_item(key=None), r"has no 'key'"),
    (_item(url=None), r"has no 'url'"),
    (_item(dimensions=None), r"has no 'dimensions'"),
    (_item(url=""), r"url must be a non-empty string"),
    (_item(key=7), r"key must be a non-empty string"),
    (_item(offset="0"), r"offset or a length alone"),
    (_item(dimensions={}), r"dimensions must be an object of one or more"),
    (_item(dimensions=[["i", 2]]), r"dimensions must be an object"),
    (_item(dimensions={"i": {"start": 2}}), r"dimension 'i' must be"),
    (_item(dimensions={"i": {"stop": 4, "step": 0}}), r"dimension 'i' must be"),
    (_item(dimensions={"i": {"stop": "4"}}), r"dimension 'i' must be"),
    (_item(dimensions={"i": {"stop": 4.0}}), r"dimension 'i' must be"),
    (_item(dimensions={"i": {"stop": True}}), r"dimension 'i' must be"),
    (_item(dimensions={"i": {"stop": 4, "stride": 2}}), r"dimension 'i' must be"),
    (_item(dimensions={"i": []}), r"dimension 'i' must list one or more"),
    (_item(dimensions={"i": [[1]]}), r"dimension 'i' must list one or more"),
    (_item(dimensions={"i": 4}), r"dimension 'i' must be"),
    (_item(dimensions={"u": [1]}), r"dimension 'u' is also the name of a template"),
    (_item(offset="{{i}}", length="x{{i}}"), r"length renders to 'x0' for key 'k0'"),
    (_item(offset="{{i}}.5", length="1"), r"offset renders to '0.5'"),
    (_item(offset="{{i - 1}}", length="1"), r"offset renders to '-1' for key 'k0'"),
    (_item(key="k{{j}}"), r"key 'k\{\{j\}\}' cannot be rendered for \{'i': 0\}.*'j' is undefined"),
    (_item(url="{{ v ~ i }}"), r"url .* 'v' is undefined"),
    (_item(offset=True, length=1), r"offset must be"),
    ({"key": "k"}, r"has no 'url'"),
    ("k", r"is not an object"),
]


@pytest.mark.parametrize(("item", "match"), MALFORMED)
def test_a_malformed_item_is_named(item: Any, match: str) -> None:
    pytest.importorskip("jinja2")
    doc = {"version": 1, "templates": {"u": "a"}, "gen": [_item(), item]}
    with pytest.raises(MetadataError, match=r"references: 'gen' item 1\b.*" + match):
        ReferenceStore(doc)


def test_gen_must_be_a_list() -> None:
    with pytest.raises(MetadataError, match=r"'gen' must be a list of items, got dict"):
        ReferenceStore({"version": 1, "gen": _item()})


UNSAFE = [
    ("{{ u.upper() }}", r"only the file's templates may be called"),
    ("{{ u.__class__ }}", r"attribute .__class__. of .str. object is unsafe"),
    ("{{ range(10) }}", r"only the file's templates may be called"),
    ("{{ lipsum() }}", r"only the file's templates may be called"),
    ("{% for n in [1, 2] %}{{n}}{% endfor %}", r"statements are not evaluated"),
    ("{{ 'x' * 10**9 }}", r"a repetition of 1000000000 items"),
    ("{{ [0] * 10**9 }}", r"a repetition of 1000000000 items"),
    ("{{ 7 ** (10**12) }}", r"a power over 4096 bits"),
    ("{{ (10**1000) * (10**1000) * (10**1000) * (10**1000) * (10**1000) }}", r"over 4096 bits"),
    ("{{ '%*d' % (10**9, 1) }}", r"%-format width or precision '\*'"),
    ("{{ '%.99999f' % 1.5 }}", r"%-format width or precision '99999'"),
    ("{{ u | center(10**9) }}", r"No filter named 'center'"),
    ("{{ u | format(1) }}", r"No filter named 'format'"),
    ("{{ name(stem=name(stem='y' * 4000)) }}", r"renders to 8004 characters, over 4096"),
    ("{{ int }}", r"'int' is undefined"),
    ("{{ " + "(" * 1000 + "1" + ")" * 1000 + " }}", r"it is nested too deeply"),
    (
        "{{ " + "1 + " * 1100 + "1 }}",
        r"\(4407 characters\).*an expression of 4407 characters",
    ),
]


@pytest.mark.parametrize(("url", "match"), UNSAFE)
def test_unsafe_expressions_are_refused(url: str, match: str) -> None:
    pytest.importorskip("jinja2")
    doc = {
        "version": 1,
        "templates": {"u": "a", "name": "{{stem}}{{stem}}.bin"},
        "gen": [_item(url=url)],
    }
    with pytest.raises(MetadataError, match=r"'gen' item 0: its url .*" + match):
        ReferenceStore(doc)


def test_safe_expressions_render() -> None:
    pytest.importorskip("jinja2")
    doc = {
        "version": 1,
        "templates": {"u": "Dir"},
        "gen": [
            _item(
                key="k{{i}}",
                url="{{ u | lower }}/f{{ '%03d' % i }}_{{ {0: 'even', 1: 'odd'}[i % 2] }}",
                offset="{{ 2 ** 10 * i }}",
                length="{{ '7' | int + 1 }}",
            ),
            _item(key="n{{i}}", offset=5, length=6),  # integers as JSON numbers too
        ],
    }
    refs = ReferenceStore(doc, allowed_targets=["/"])._refs
    assert refs == {
        "k0": ["dir/f000_even", 0, 8],
        "k1": ["dir/f001_odd", 1024, 8],
        "n0": ["a.bin", 5, 6],
        "n1": ["a.bin", 5, 6],
    }


def test_plain_templates_and_gen_need_no_jinja2(tmp_path: Path) -> None:
    """Without jinja2: plain substitution reads; an expression names the package."""
    _data(tmp_path)
    plain = _gen_doc(tmp_path)
    plain["templates"] = {"u": f"{tmp_path}/part"}
    plain["gen"][0].update(url="{{u}}{{f}}.bin", offset="{{off}}")
    plain["gen"][0]["dimensions"] = {"f": [0], "j": {"stop": ROWS}, "off": [16]}
    for j in range(ROWS):  # row 2 by plain templates in refs
        plain["refs"][f"x/2.{j}"] = ["{{u}}2.bin", (j * 25 + 4) * 4, 100]
    script = f"""
import json, sys
sys.modules["jinja2"] = None  # as if it were not installed
import aiozarr
from aiozarr.errors import UnsupportedError
doc = json.loads({json.dumps(json.dumps(plain))})
array = aiozarr.open_group(doc, mode="r", storage_options={{"allowed_targets": ["/"]}})["x"]
print(json.dumps(array[:].tolist()))
doc["gen"][0]["offset"] = "{{{{ off + 0 }}}}"
try:
    aiozarr.open_group(doc, mode="r")
except UnsupportedError as error:
    print("refused:", error)
"""
    src = str(Path(aiozarr.__file__).parents[1])  # this aiozarr, whatever the cwd
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    values = _data(tmp_path)
    header = np.full(4, -1, "<i4")
    expected = [np.tile(values[0, :25], ROWS), np.tile(np.r_[header, values[1, :21]], ROWS)]
    np.testing.assert_array_equal(json.loads(first), [*expected, values[2]])
    assert "refused:" in second and "need jinja2" in second and "aiozarr[references]" in second


async def test_jinja_templates_in_refs(tmp_path: Path) -> None:
    """A template holding `{{` is called from refs with its variables, or named alone;
    an unknown `{{name}}` stays as written (as before); a bad call names the key."""
    pytest.importorskip("jinja2")
    (tmp_path / "ab.bin").write_bytes(b"0123456789")
    templates = {"f": "{{c}}.bin", "g": "{{ 'a' ~ 'b' }}.bin"}
    refs = {"k1": ["{{f(c='ab')}}", 2, 3], "k2": ["{{g}}"], "k3": ["{{nope}}x.bin"]}
    doc = {"version": 1, "templates": templates, "refs": refs}
    store = ReferenceStore(_write(tmp_path, doc))
    assert bytes(await store.get("k1")) == b"234"
    assert store._refs is not None and store._refs["k3"] == ["{{nope}}x.bin"]
    assert bytes(await store.get("k2")) == b"0123456789"
    for url, match in [
        ("{{f()}}", r"'k1' cannot be rendered: .*'c' is undefined"),
        ("{{f(c=g ~ 'x' * 5000)}}", r"'k1' cannot be rendered: .*a repetition of 5000"),
        ("{{ f(c=g.__class__) }}", r"'k1' cannot be rendered: .*__class__.* is unsafe"),
    ]:
        doc["refs"] = {"k1": [url, 0, 1]}
        with pytest.raises(MetadataError, match=match):
            await ReferenceStore(_write(tmp_path, doc)).exists("k1")
    doc["refs"] = {"k1": ["{{h(c=1)}}", 0, 1]}
    doc["templates"] = {"h": "{% for i in range(9) %}{{c}}{% endfor %}"}
    with pytest.raises(MetadataError, match=r"'k1' cannot be rendered: .*statements are not"):
        await ReferenceStore(_write(tmp_path, doc)).exists("k1")


def test_distinct_expressions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("jinja2")
    monkeypatch.setattr(templating, "MAX_EXPRESSIONS", 3)  # 10,000: ~10 s to compile
    items = [_item(key=f"k{n}{{{{i}}}}", offset=f"{{{{ i + {n} }}}}", length="1") for n in range(3)]
    ReferenceStore({"version": 1, "gen": items}, allowed_targets=["/"])  # 3: read
    items.append(_item(key="k3{{i}}", offset="{{ i + 3 }}", length="1"))
    with pytest.raises(UnsupportedError, match=r"more than 3 distinct expressions"):
        ReferenceStore({"version": 1, "gen": items}, allowed_targets=["/"])


async def test_version_1_without_refs_is_all_generated(tmp_path: Path) -> None:
    """`refs` is optional in version 1: `{"version": 1, "gen": [...]}` is not read as a
    version 0 mapping of keys "version" and "gen"."""
    (tmp_path / "a.bin").write_bytes(b"abcdef")
    doc = {"version": 1, "gen": [_item(offset="{{i}}", length="2")]}
    assert is_reference_source(doc)
    store = ReferenceStore(_write(tmp_path, doc))
    assert sorted([k async for k in store.list_prefix("")]) == ["k0", "k1"]
    assert bytes(await store.get("k1")) == b"bc"


def test_evaluated_expressions_are_metered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Work, not only the count of keys, is bounded: each evaluation counts its
    expression's length, and a call of a template its template's too."""
    pytest.importorskip("jinja2")
    monkeypatch.setattr(templating, "MAX_EVALUATED_CHARS", 1000)  # 10**8: ~10 s of work
    doc = {"version": 1, "templates": {"f": "{{ 'x' }}"}}
    doc["gen"] = [_item(url="{{ f() ~ f() ~ f() }}", dimensions={"i": {"stop": 20}})]
    ReferenceStore(doc, allowed_targets=["/"])  # 20 * (21 + 3 * 9) = 960
    doc["gen"][0]["dimensions"] = {"i": {"stop": 21}}
    with pytest.raises(UnsupportedError, match=r"expressions are longer than 1000 characters"):
        ReferenceStore(doc, allowed_targets=["/"])
