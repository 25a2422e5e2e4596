"""The emulator's fault rules: what a rule is, which requests it matches, and the checks
its arguments pass (the same for `Emulator.inject` and `POST /_emulator/faults`)."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass

__all__ = ["FAULT_KINDS", "MAX_DELAY_S", "Fault", "check_number", "make_fault"]

#: What `Emulator.inject` can do to a request.
FAULT_KINDS = ("status", "reset", "truncate", "slow", "late", "lost")
MAX_DELAY_S = 3600.0  # the longest wait a fault or the network shaping may add


def check_number(name: str, value: object, *, high: float = math.inf) -> float:
    """`value` as a float, checked: a finite number within [0, high]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, not {value!r}")
    if not (math.isfinite(value) and 0 <= value <= high):
        raise ValueError(f"{name} must be a finite number within [0, {high:g}], not {value!r}")
    return float(value)


@dataclass
class Fault:
    """A fault rule. `count`: the next N matching requests; `rate`: each with this
    probability; neither: every matching request until `clear_faults`."""

    kind: str
    count: int | None = None
    rate: float | None = None
    key_glob: str | None = None
    methods: tuple[str, ...] | None = None
    status: int = 503
    delay_s: float = 1.0

    def matches(self, method: str, key: str) -> bool:
        if self.methods is not None and method not in self.methods:
            return False
        return self.key_glob is None or fnmatch.fnmatchcase(key, self.key_glob)


def make_fault(
    kind: str,
    *,
    count: int | None = None,
    rate: float | None = None,
    key_glob: str | None = None,
    methods: list[str] | tuple[str, ...] | None = None,
    status: int = 503,
    delay_s: float = 1.0,
) -> Fault:
    """A fault rule (the arguments of `Emulator.inject`), every argument checked:
    ValueError or TypeError saying which is wrong."""
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        raise TypeError(f"count must be an integer, not {count!r}")
    if count is not None and count < 1:
        raise ValueError(f"count must be >= 1, not {count!r}")
    if rate is not None:
        check_number("rate", rate, high=1)
    if key_glob is not None and not isinstance(key_glob, str):
        raise TypeError(f"key_glob must be a string, not {key_glob!r}")
    if methods is not None and (
        not isinstance(methods, list | tuple) or not all(isinstance(m, str) for m in methods)
    ):
        raise TypeError(f"methods must be a list of method names, not {methods!r}")
    if isinstance(status, bool) or not isinstance(status, int):
        raise TypeError(f"status must be an integer, not {status!r}")
    if not 400 <= status <= 599:
        raise ValueError(f"status must be an error status (400-599), not {status!r}")
    check_number("delay_s", delay_s, high=MAX_DELAY_S)
    return Fault(
        kind,
        count,
        rate,
        key_glob,
        None if methods is None else tuple(m.upper() for m in methods),
        status,
        delay_s,
    )
