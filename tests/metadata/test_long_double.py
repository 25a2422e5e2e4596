"""numpy's long double (`float128` / `complex256`, a field of one too) is refused by
`create_array` in both formats, as zarr-python 3.1/3.4 refuse it: its 16 bytes are the
platform's (80-bit extended and padding on x86, IEEE quad on Linux/ARM), so a v2 `<f16`
array aiozarr wrote read as other values elsewhere, and zarr-python 3 could not open it.
An existing `<f16` array (zarr-python 2 wrote them) still opens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aiozarr
from aiozarr.errors import UnsupportedError

pytestmark = pytest.mark.skipif(
    np.dtype(np.longdouble).itemsize == 8, reason="long double is float64 on this platform"
)


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize(
    "dtype", [np.longdouble, np.clongdouble, "g", [("a", "<i4"), ("b", np.longdouble, (2,))]]
)
def test_long_double_is_refused(tmp_path: Path, dtype: Any, zarr_format: int) -> None:
    with pytest.raises(UnsupportedError, match="long double"):
        aiozarr.create_array(str(tmp_path), shape=(2,), dtype=dtype, zarr_format=zarr_format)
    assert list(tmp_path.iterdir()) == []


def test_a_stored_f16_array_still_opens(tmp_path: Path) -> None:
    values = np.array([1.5, -2.25], dtype="<f16")
    document = {
        "zarr_format": 2,
        "shape": [2],
        "chunks": [2],
        "dtype": "<f16",
        "fill_value": 0.0,
        "order": "C",
        "filters": None,
        "compressor": None,
    }
    (tmp_path / ".zarray").write_text(json.dumps(document))
    (tmp_path / "0").write_bytes(values.tobytes())
    array = aiozarr.open_array(str(tmp_path))
    np.testing.assert_array_equal(array[...], values)
    array.attrs["units"] = "m"  # its metadata is still rewritten
    assert aiozarr.open_array(str(tmp_path)).attrs["units"] == "m"
