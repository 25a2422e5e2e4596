"""The object-store emulator, kept importable here for code written before it moved to
`aiozarr.emulator` (a product feature: `aiozarr serve`)."""

from aiozarr.emulator import FAULT_KINDS, Emulator, Fault

__all__ = ["FAULT_KINDS", "Emulator", "Fault"]
