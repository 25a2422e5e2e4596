"""The memory a read's result may take (`aiozarr.sizes.memory_bytes`: stores use it too)."""

from __future__ import annotations

from aiozarr.sizes import memory_bytes

__all__ = ["memory_bytes"]
