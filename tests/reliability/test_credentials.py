"""An array opened with `EnvironmentCredentials` carries no secret when pickled; each
process that reads it signs with the keys of its own environment."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.servers import MOTO_BUCKET

import aiozarr
from aiozarr.storage import EnvironmentCredentials
from aiozarr.storage.opening.url import from_url

SECRET = "never-in-a-pickle-3f9c"


def _options(moto: dict[str, Any]) -> dict[str, Any]:
    return {
        "endpoint": moto["endpoint"],
        "region": "us-east-1",
        "client_options": {"allow_http": True},
        "credential_provider": EnvironmentCredentials(),
    }


def test_a_pickled_array_holds_no_secret_and_the_reader_signs_with_its_own_keys(
    moto_s3_options: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    url = f"s3://{MOTO_BUCKET}/credentials-{tmp_path.name}.zarr"
    store = from_url(url, storage_options=_options(moto_s3_options))
    arr = aiozarr.create_array(store, shape=(6,), dtype="i4", chunks=(3,))
    arr[:] = np.arange(6)
    blob = pickle.dumps(arr)
    assert SECRET.encode() not in blob and b"testing" not in blob
    (tmp_path / "array.pickle").write_bytes(blob)
    read = textwrap.dedent(f"""
        import os, pickle, sys
        arr = pickle.loads(open({str(tmp_path / "array.pickle")!r}, "rb").read())
        try:
            print(arr[:].tolist())
        except Exception as error:
            print(type(error).__name__, error)
        sys.stdout.flush()
        os._exit(0)  # obstore may abort at interpreter exit
    """)
    keys = {"AWS_ACCESS_KEY_ID": "worker", "AWS_SECRET_ACCESS_KEY": "its-own"}
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    worker = subprocess.run(
        [sys.executable, "-c", read],
        env={**clean, **keys},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert worker.stdout.strip() == "[0, 1, 2, 3, 4, 5]", worker.stderr
    keyless = subprocess.run(
        [sys.executable, "-c", read], env=clean, capture_output=True, text=True, timeout=60
    )
    assert "AWS_ACCESS_KEY_ID" in keyless.stdout, keyless.stdout + keyless.stderr
