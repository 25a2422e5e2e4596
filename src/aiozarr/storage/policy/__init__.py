"""The request policy: everything between "these ranges of these keys" and a request on
the wire, shared by every caller of one store.

`batching.py` turns a batch of wanted ranges into backend requests (`ranges.py`
coalesces and splits them, `fanin.py` streams the answers back); `retry.py` runs each
request (a budget slot, a timeout, retries, hedging); `runtime.py` holds what every
caller of one store shares: the request and byte budgets (`budget.py`,
`bytes_budget.py`), the statistics (`statistics.py`), per-key write locks (`locks.py`)
and what was learnt of the server (`whole_reads.py`). `backend.py` is what a backend
offers the policy; `keys.py` what a key may be.
"""

from aiozarr.storage.policy.bytes_budget import HeldBytes
from aiozarr.storage.policy.locks import KeyLocks
from aiozarr.storage.policy.runtime import runtime_in_use
from aiozarr.storage.policy.shaping import RequestShape

__all__ = ["HeldBytes", "KeyLocks", "RequestShape", "runtime_in_use"]
