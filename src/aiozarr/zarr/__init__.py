from aiozarr.zarr.pipeline import CodecPipeline as CodecPipeline
