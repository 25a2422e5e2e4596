"""A metadata document that starts with a UTF-8 byte order mark (Notepad and
PowerShell 5 write one) is read, as zarr-python 3.1/3.4 and TensorStore read it;
aiozarr refused it as "not valid JSON"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import MetadataError
from aiozarr.metadata.json import load

BOM = b"\xef\xbb\xbf"


def _with_bom(path: Path) -> None:
    path.write_bytes(BOM + path.read_bytes())


@pytest.mark.parametrize("consolidated", [False, True])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_documents_with_a_byte_order_mark_are_read(
    tmp_path: Path, zarr_format: int, consolidated: bool
) -> None:
    root = aiozarr.create_group(str(tmp_path), zarr_format=zarr_format, attributes={"t": "é"})
    root.create_array("a", shape=(3,), dtype="i4", fill_value=7, attributes={"units": "m"})
    if consolidated:
        aiozarr.consolidate_metadata(str(tmp_path))
    names = ["zarr.json"] if zarr_format == 3 else [".zgroup", ".zattrs"]
    names += [".zmetadata"] if consolidated and zarr_format == 2 else []
    for name in names:
        _with_bom(tmp_path / name)
    for name in ["zarr.json"] if zarr_format == 3 else [".zarray", ".zattrs"]:
        _with_bom(tmp_path / "a" / name)
    group = aiozarr.open_group(str(tmp_path))
    assert dict(group.attrs) == {"t": "é"}
    assert [(name, dict(a.attrs)) for name, a in group.members()] == [("a", {"units": "m"})]
    np.testing.assert_array_equal(aiozarr.open_array(str(tmp_path / "a"))[...], [7, 7, 7])


def test_a_document_still_must_be_json() -> None:
    assert load(BOM + b'{"a": 1}', "zarr.json") == {"a": 1}
    with pytest.raises(MetadataError, match=r"zarr\.json: not valid JSON"):
        load(BOM + b"{nope", "zarr.json")
    with pytest.raises(MetadataError, match=r"zarr\.json: not valid JSON"):
        load(b'{"a": "\\xff"}'.replace(b"\\xff", b"\xff"), "zarr.json")
