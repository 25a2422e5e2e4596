"""The sync API: a portal to one background event loop (`portal`) and the facade
classes over the async objects (`facade`)."""

from aiozarr.sync.facade import Array, Group
from aiozarr.sync.portal import asyncio_only, run

__all__ = ["Array", "Group", "asyncio_only", "run"]
