"""Decompression bombs: every codec path, v2 and v3, stops at the chunk's decoded size.

Each case is a small stored value that inflates far past the chunk it is read as (64 MiB
for a 4 KiB chunk): decoding it raises a `CodecError` naming the chunk's key, having
allocated no more than the chunk, the stored value and a fixed working set (traced by
tracemalloc, which sees every allocation Python and the zlib, bz2 and lzma modules make,
numcodecs' buffers included). The zstd cases include frames that do not record their
decoded size (a streaming writer's): numcodecs inflates those whole.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import numcodecs
import numpy as np
import pytest
import zstandard

from aiozarr.codecs import CodecChain
from aiozarr.codecs.base import UNSIZED_MAX_DECODED_BYTES
from aiozarr.errors import CodecError
from aiozarr.nodes.creation import array_metadata

CHUNK = 4096  # the chunk's decoded size, in bytes
BOMB = 64 << 20  # what each bomb inflates to
KEY = "bomb/c/0"
_ZEROS = bytes(1 << 20)


def _zstd_stream(total: int, level: int = 1) -> bytes:
    """A zstd frame of `total` zero bytes that does not record its size (as a stream
    compressor writes it), built a MiB at a time."""
    compressor = zstandard.ZstdCompressor(level=level, write_content_size=False).compressobj()
    parts = [compressor.compress(_ZEROS) for _ in range(total >> 20)]
    return b"".join(parts) + compressor.flush()


def _zstd_sized(total: int) -> bytes:
    """A zstd frame of `total` zero bytes whose header records `total`."""
    compressor = zstandard.ZstdCompressor(level=1, write_content_size=True).compressobj(size=total)
    parts = [compressor.compress(_ZEROS) for _ in range(total >> 20)]
    return b"".join(parts) + compressor.flush()


def _zstd_one_frame(total: int) -> bytes:
    """A zstd frame of `total` zero bytes whose header records `total`, in one call."""
    return zstandard.ZstdCompressor(level=1, write_content_size=True).compress(bytes(total))


def _numcodec(config: dict[str, Any]) -> Callable[[], bytes]:
    return lambda: bytes(numcodecs.get_codec(config).encode(np.zeros(BOMB, dtype="u1")))


def _v2(compressor: dict[str, Any] | None, **options: Any) -> CodecChain:
    options.setdefault("dtype", "u1")
    size = CHUNK // np.dtype(options["dtype"]).itemsize if options["dtype"] != "O" else CHUNK
    if options["dtype"] == "O":
        options["dtype"] = np.dtype(object)
    meta = array_metadata(
        shape=(size,),
        chunks=(size,),
        zarr_format=2,
        compressors=None if compressor is None else [compressor],
        **options,
    )
    return CodecChain.from_metadata(meta)


def _v3(codecs: list[dict[str, Any]] | None, dtype: Any = "u1", **options: Any) -> CodecChain:
    size = CHUNK // np.dtype(dtype).itemsize if isinstance(dtype, str) else CHUNK
    meta = array_metadata(shape=(size,), dtype=dtype, chunks=(size,), compressors=codecs, **options)
    return CodecChain.from_metadata(meta)


def _zstd(**config: Any) -> dict[str, Any]:
    return {"name": "zstd", "configuration": {"level": 1, "checksum": False, **config}}


def _vlen_header(items: int) -> bytes:
    """A variable-length chunk that claims `items` items and holds none."""
    return items.to_bytes(4, "little")


def _pcodec_bomb() -> bytes:
    return bytes(numcodecs.get_codec({"id": "pcodec"}).encode(np.zeros(BOMB // 4, dtype="<u4")))


#: name -> (the chain the bomb is read with, the bomb).
CASES: dict[str, tuple[Callable[[], CodecChain], Callable[[], bytes]]] = {
    # v2: every compressor numcodecs ships, and the frames numcodecs inflates unbounded.
    **{
        f"v2-{cid}": (lambda cid=cid: _v2({"id": cid}), _numcodec({"id": cid}))
        for cid in ("zlib", "gzip", "bz2", "lzma", "lz4", "zstd", "blosc")
    },
    "v2-zstd-streamed": (lambda: _v2({"id": "zstd"}), lambda: _zstd_stream(BOMB)),
    "v2-delta-then-zstd-streamed": (
        lambda: _v2({"id": "zstd"}, filters=[{"id": "delta", "dtype": "u1"}]),
        lambda: _zstd_stream(BOMB),
    ),
    "v2-zlib-as-filter": (
        lambda: _v2(None, filters=[{"id": "zlib"}]),
        _numcodec({"id": "zlib"}),
    ),
    "v2-vlen-utf8-header": (
        lambda: _v2(None, dtype="O", filters=[{"id": "vlen-utf8"}]),
        lambda: _vlen_header(1 << 24),
    ),
    # v3: the built-in compressors, a compressor after a compressor (whose decoded size
    # is bounded, not known), and the `numcodecs.*` codecs.
    "v3-zstd": (lambda: _v3([_zstd()]), lambda: _zstd_sized(BOMB)),
    "v3-zstd-streamed": (lambda: _v3([_zstd()]), lambda: _zstd_stream(BOMB)),
    "v3-gzip": (lambda: _v3([{"name": "gzip"}]), _numcodec({"id": "gzip"})),
    "v3-blosc": (
        lambda: _v3([{"name": "blosc", "configuration": {"cname": "lz4"}}]),
        _numcodec({"id": "blosc", "cname": "lz4"}),
    ),
    "v3-zstd-after-zstd-streamed": (
        lambda: _v3([_zstd(), _zstd()]),
        lambda: _zstd_stream(BOMB),
    ),
    "v3-zstd-after-zstd": (lambda: _v3([_zstd(), _zstd()]), lambda: _zstd_sized(BOMB)),
    "v3-gzip-after-zstd": (lambda: _v3([_zstd(), {"name": "gzip"}]), _numcodec({"id": "gzip"})),
    **{
        f"v3-numcodecs.{cid}": (
            lambda cid=cid: _v3([{"name": f"numcodecs.{cid}"}]),
            _numcodec({"id": cid}),
        )
        for cid in ("zlib", "gzip", "bz2", "lzma", "lz4", "zstd", "blosc")
    },
    "v3-numcodecs.zstd-streamed": (
        lambda: _v3([{"name": "numcodecs.zstd"}]),
        lambda: _zstd_stream(BOMB),
    ),
    "v3-numcodecs.zlib-after-zstd": (
        lambda: _v3([_zstd(), {"name": "numcodecs.zlib"}]),
        _numcodec({"id": "zlib"}),
    ),
    "v3-vlen-utf8-header": (
        lambda: _v3(None, dtype=np.dtypes.StringDType()),
        lambda: _vlen_header(1 << 24),
    ),
    "v3-numcodecs.pcodec": (
        lambda: _v3(None, dtype="u4", serializer={"name": "numcodecs.pcodec"}),
        _pcodec_bomb,
    ),
}


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {}


def _bomb(cache: dict[str, bytes], name: str) -> bytes:
    if name not in cache:
        cache[name] = CASES[name][1]()
    return cache[name]


def _traced(call: Callable[[], object]) -> tuple[BaseException | None, int]:
    """The error `call` raised (None: none) and the most memory it held at once."""
    tracemalloc.start()
    try:
        try:
            call()
        except Exception as error:
            raised: BaseException | None = error
        else:
            raised = None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return raised, peak


@pytest.mark.parametrize("into", [False, True], ids=["decode", "decode_into"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_bomb_is_a_codec_error_within_the_chunk_size(
    bombs: dict[str, bytes], name: str, into: bool
) -> None:
    chain = CASES[name][0]()
    bomb = _bomb(bombs, name)
    assert len(bomb) < BOMB // 64  # it is a bomb: a small value claiming much more
    out = np.empty(chain.spec.shape, dtype=chain.spec.dtype)
    if into:
        raised, peak = _traced(lambda: chain.decode_into(bomb, out, KEY))
    else:
        raised, peak = _traced(lambda: chain.decode(bomb, KEY))
    assert isinstance(raised, CodecError), f"{name}: {raised!r}"
    assert repr(KEY) in str(raised)
    # Beyond the chunk: a copy of the stored value and a fixed working set (1 MiB; lzma's
    # decoder keeps its dictionary, 8 MiB at the default preset, whatever it inflates to).
    working = (9 << 20) if "lzma" in name else (1 << 20)
    allowed = chain.spec.nbytes + 2 * len(bomb) + working
    assert peak < allowed, f"{name}: {peak} bytes allocated for a {CHUNK}-byte chunk"


def test_variable_length_chunk_stops_at_the_ceiling() -> None:
    # A chunk of strings has no size its shape fixes: a compressor before vlen-utf8
    # stops at UNSIZED_MAX_DECODED_BYTES; a frame recording more is refused unread.
    chain = _v3([_zstd()], dtype=np.dtypes.StringDType())
    bomb = _zstd_sized(UNSIZED_MAX_DECODED_BYTES + (1 << 20))
    raised, peak = _traced(lambda: chain.decode(bomb, KEY))
    assert isinstance(raised, CodecError) and repr(KEY) in str(raised), repr(raised)
    assert "more than" in str(raised)
    assert peak < 2 * len(bomb) + (1 << 20)
    v2 = _v2({"id": "zstd"}, dtype="O", filters=[{"id": "vlen-utf8"}])
    raised, peak = _traced(lambda: v2.decode(bomb, KEY))
    assert isinstance(raised, CodecError) and repr(KEY) in str(raised), repr(raised)
    assert peak < 2 * len(bomb) + (1 << 20)


@pytest.mark.parametrize("name", ["v2-zstd", "v3-zstd", "v3-numcodecs.zstd", "v3-zstd-after-zstd"])
def test_streamed_zstd_frames_still_decode(name: str) -> None:
    # Frames that do not record their size (a streaming writer's) decode as before.
    chain = CASES[name][0]()
    value = np.arange(CHUNK, dtype="u1")
    inner = value.tobytes()
    if name == "v3-zstd-after-zstd":
        inner = bytes(chain.bytes_to_bytes[0].encode(inner, chain.spec))
    streamed = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = streamed.compress(inner) + streamed.flush()
    np.testing.assert_array_equal(chain.decode(frame, KEY), value)
    out = np.empty_like(value)
    chain.decode_into(frame, out, KEY)
    np.testing.assert_array_equal(out, value)
    with pytest.raises(CodecError, match=re.escape(repr(KEY))):  # a frame cut short
        chain.decode(frame[:-8], KEY)


@pytest.mark.parametrize("name", ["v2-zstd", "v3-numcodecs.zstd", "v3-zstd-after-zstd"])
def test_zstd_chunk_of_several_sized_frames_decodes(name: str) -> None:
    # Frames back to back, each recording its size, decode to their concatenation.
    chain = CASES[name][0]()
    value = np.arange(CHUNK, dtype="u1")
    inner = value.tobytes()
    if name == "v3-zstd-after-zstd":
        inner = bytes(chain.bytes_to_bytes[0].encode(inner, chain.spec))
    half = len(inner) // 2
    frames = b"".join(
        zstandard.ZstdCompressor(write_content_size=True).compress(part)
        for part in (inner[:half], inner[half:])
    )
    np.testing.assert_array_equal(chain.decode(frames, KEY), value)


@pytest.mark.parametrize("dtype", ["<u4", "<f8", "<i2"])
def test_v2_pcodec_chunk_decodes(dtype: str) -> None:
    chain = _v2({"id": "pcodec"}, dtype=dtype)
    value = np.arange(CHUNK // np.dtype(dtype).itemsize).astype(dtype)
    np.testing.assert_array_equal(chain.decode(chain.encode(value), KEY), value)
    short = bytes(numcodecs.get_codec({"id": "pcodec"}).encode(value[:-1]))
    with pytest.raises(CodecError, match=re.escape(repr(KEY))):
        chain.decode(short, KEY)


_MEASURE = """
import sys
import numpy as np
from aiozarr.codecs import CodecChain
from aiozarr.errors import CodecError
from aiozarr.nodes.creation import array_metadata

def status(field):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(field))

bomb = open(sys.argv[1], "rb").read()
dtype, serializer, compressors, zarr_format = eval(sys.argv[2])
meta = array_metadata(
    shape=(1024,), dtype=dtype, chunks=(1024,), serializer=serializer,
    compressors=compressors, zarr_format=zarr_format,
)
chain = CodecChain.from_metadata(meta)
chain.decode(chain.encode(np.zeros(1024, dtype=dtype)))  # warm: libraries loaded
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # the peak resident size starts again from here
before = status("VmRSS:")
try:
    chain.decode(bomb, "bomb/c/0")
except CodecError:
    pass
print(status("VmHWM:") - before)
"""


@pytest.mark.skipif(
    not os.path.exists("/proc/self/clear_refs"), reason="needs Linux's peak resident size"
)
@pytest.mark.parametrize(
    ("name", "chain"),
    [
        ("pcodec", ("<u4", {"name": "numcodecs.pcodec"}, None, 3)),
        ("v2-pcodec", ("<u4", "auto", [{"id": "pcodec"}], 2)),
        ("v2-zstd-streamed", ("<u4", "auto", [{"id": "zstd"}], 2)),
        # A first frame that records the chunk's size, then one that records none: the
        # first frame's header does not bound the chunk.
        ("v2-zstd-two-frames", ("<u4", "auto", [{"id": "zstd"}], 2)),
        ("v3-numcodecs.zstd-two-frames", ("<u4", "auto", [{"name": "numcodecs.zstd"}], 3)),
        ("v3-zstd-after-zstd-two-frames", ("<u4", "auto", [_zstd(), _zstd()], 3)),
        ("v3-zstd-variable-length-two-frames", ("T", "auto", [_zstd()], 3)),
    ],
)
def test_bombs_inflated_outside_python_stay_small(
    tmp_path: Any, name: str, chain: tuple[Any, ...]
) -> None:
    # pcodec (Rust) and zstd (C) allocate where tracemalloc cannot see: the peak resident
    # memory of a process that decodes a 128 MiB bomb as a 4 KiB chunk is measured (its
    # own high-water mark, reset before the decode: ru_maxrss would start from the
    # parent's size at fork).
    total = 128 << 20
    if name.endswith("pcodec"):
        codec = numcodecs.get_codec({"id": "pcodec"})
        bomb = bytes(codec.encode(np.zeros(total // 4, dtype="<u4")))
    elif name.endswith("variable-length-two-frames"):  # past the unsized 1 GiB ceiling
        bomb = _zstd_one_frame(4096) + _zstd_stream(UNSIZED_MAX_DECODED_BYTES + total)
    elif name.endswith("two-frames"):
        bomb = _zstd_one_frame(4096) + _zstd_stream(total)
    else:
        bomb = _zstd_stream(total)
    path = tmp_path / "bomb"
    path.write_bytes(bomb)
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), repr(chain)],
        capture_output=True,
        text=True,
        check=True,
    )
    grew_kib = int(result.stdout.split()[-1])
    assert grew_kib < 32 << 10, f"{name}: peak memory grew {grew_kib} KiB for a 4 KiB chunk"
