"""`BeforeWrites`: a store that lets another writer in just before its own writes;
`OtherProcess`: a store object that shares no write locks with this process's."""

from __future__ import annotations

from aiozarr.storage.policy.runtime import StoreRuntime
from aiozarr.storage.protocol import Buffer, Version
from aiozarr.storage.protocol.wrapper import WrapperStore


class BeforeWrites(WrapperStore):
    """The wrapped store, running `before(key)` ahead of each write (`set`, `set_if`):
    a subclass lets another writer change what this one read, at the moment it matters."""

    async def before(self, key: str) -> None:
        """What happens just before `key` is written (here: nothing)."""

    async def set(self, key: str, value: Buffer) -> None:
        await self.before(key)
        await super().set(key, value)

    async def set_if(
        self, key: str, value: Buffer, expected: Version | None, *, claim: bool = False
    ) -> None:
        await self.before(key)
        await super().set_if(key, value, expected, claim=claim)


class OtherProcess(WrapperStore):
    """The wrapped store with write locks of its own, as another process holds: a writer
    through it does not wait for the locks this process's update holds."""

    @property
    def runtime(self) -> StoreRuntime:
        return super(WrapperStore, self).runtime
