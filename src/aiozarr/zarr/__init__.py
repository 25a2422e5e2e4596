"""zarr-python 3 on aiozarr: `CodecPipeline` and `Store`. Needs the `zarr` extra."""

from aiozarr.errors import require_extra

require_extra("aiozarr.zarr", "zarr", "zarr")

from aiozarr.zarr.pipeline import CodecPipeline as CodecPipeline  # noqa: E402
from aiozarr.zarr.store import Store as Store  # noqa: E402
