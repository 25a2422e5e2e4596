"""aiozarr: fast async reads and writes of Zarr arrays on cloud object stores."""

__version__ = "0.1.0"
