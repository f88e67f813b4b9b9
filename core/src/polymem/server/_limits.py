"""Per-token rate limits: a token bucket per caller, shared by the REST routes and `/mcp`.

Each request takes `1 + body bytes // COST_BYTES` units from its caller's bucket (a large body,
such as a batch of texts to embed, costs more), which refills at `rate` units per second up to
`burst`. A request finding too few units is answered 429 with `Retry-After` (seconds until the
bucket holds enough). A caller is its bearer token (hashed; the limiter never keeps a secret),
else its address. A request costing more than `burst` waits for a full bucket and empties it.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

# Each KiB of body costs one unit more than an empty body (texts to embed cost CPU in proportion).
COST_BYTES = 1 << 10
# The most text one /v1/embed request may ask to embed, by default (about 8 texts of 4 kB, ~1 s of CPU
# for all-MiniLM-L6-v2 on one core); the HTTP client splits its embedding requests to fit.
MAX_EMBED_CHARS = 32_768
# Callers remembered at once (least recently seen forgotten first: a forgotten caller starts full).
MAX_CALLERS = 10_000


@dataclass
class _Bucket:
    units: float
    at: float


class RateLimiter:
    """Token buckets keyed by caller; `take()` says how long to wait (0: go ahead)."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0 or not burst >= 1:
            raise ValueError(f"rate must be > 0 and burst >= 1, got rate={rate!r}, burst={burst!r}")
        self.rate, self.burst, self.clock = float(rate), float(burst), clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    @staticmethod
    def caller(authorization: bytes | None, address: str | None) -> str:
        if authorization:
            return "t:" + hashlib.sha256(authorization).hexdigest()[:32]
        return f"a:{address or '?'}"

    @staticmethod
    def cost(body_bytes: int) -> float:
        return 1.0 + max(body_bytes, 0) // COST_BYTES

    def take(self, caller: str, cost: float) -> float:
        """Take `cost` units from the caller's bucket: 0.0, or the seconds until it could (nothing taken)."""
        now = self.clock()
        bucket = self._buckets.pop(caller, None) or _Bucket(self.burst, now)
        self._buckets[caller] = bucket
        if len(self._buckets) > MAX_CALLERS:
            self._buckets.popitem(last=False)
        bucket.units = min(self.burst, bucket.units + (now - bucket.at) * self.rate)
        bucket.at = now
        need = min(cost, self.burst)
        if bucket.units >= need:
            bucket.units -= need
            return 0.0
        return (need - bucket.units) / self.rate

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
