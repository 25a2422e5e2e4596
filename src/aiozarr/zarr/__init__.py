from aiozarr.zarr.pipeline import CodecPipeline as CodecPipeline
from aiozarr.zarr.store import Store as Store
