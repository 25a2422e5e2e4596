"""The addresses `aiozarr serve` prints are URLs a client can open, whatever it listens on."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest
import yarl
from tests.security.test_serve import serve

import aiozarr


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
def test_an_ipv6_address_is_written_in_brackets(tmp_path: Path) -> None:
    # `--host ::1` printed http://::1:8000/... (and used it as the S3 endpoint): no
    # client reads that as an address and a port.
    served = tmp_path / "served"
    aiozarr.create_array(served / "a", shape=(4,), chunks=(2,), dtype="i2")[:] = [1, 2, 3, 4]
    with serve(served, "--host", "::1") as (port, banner):
        urls = {
            line.split(":", 1)[0].strip(): line.split(":", 1)[1].split()[0]
            for line in banner.splitlines()[1:]
            if line.strip().startswith(("HTTP:", "stats:"))
        }
        assert urls["HTTP"] == f"http://[::1]:{port}/served/"
        assert yarl.URL(urls["stats"]).host == "::1"
        np.testing.assert_array_equal(aiozarr.open_array(urls["HTTP"] + "a")[:], [1, 2, 3, 4])
        endpoint = banner.split("endpoint=", 1)[1].split()[0]
        assert endpoint == f"http://[::1]:{port}"
        options = {"endpoint": endpoint, "skip_signature": True, "region": "us-east-1"}
        arr = aiozarr.open_array("s3://served/a", storage_options=options)
        np.testing.assert_array_equal(arr[:], [1, 2, 3, 4])
