"""When to try an HTTP request again, and how long to wait first (standard library only).

Retried: 429 and 5xx answers that say "try later" (500, 502, 503, 504), and connections the
server reset before answering. Never retried: any other 4xx (asking again changes nothing)
and timeouts (the wait already spent is the server's answer). Waits grow exponentially with
jitter (`base × 2^(n-1)`, ×0.5-1.0 random), or follow the server's `Retry-After` (seconds or
an HTTP date); a `Retry-After` beyond `max_wait` is not waited for: the request fails now.
`sleep`, `clock` and `rand` are injectable so tests never really wait.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
DEFAULT_ATTEMPTS = 4
DEFAULT_BASE = 0.5
DEFAULT_MAX_WAIT = 30.0


@dataclass(slots=True)
class RetryPolicy:
    """Bounded attempts with exponential backoff and jitter; see the module docstring."""

    attempts: int = DEFAULT_ATTEMPTS
    base: float = DEFAULT_BASE
    max_wait: float = DEFAULT_MAX_WAIT
    #: how to wait (None: `pause`, which tests replace); never called with more than max_wait
    sleep: Callable[[float], None] | None = None
    clock: Callable[[], float] = field(default=time.time)
    rand: Callable[[], float] = field(default=random.random)

    def wait(self, seconds: float) -> None:
        """Wait before the next attempt."""
        (self.sleep or pause)(min(seconds, self.max_wait))

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based) when the server gave no
        Retry-After."""
        full = min(self.base * 2.0 ** (attempt - 1), self.max_wait)
        return full * (0.5 + 0.5 * self.rand())

    def retry_after(self, value: str | None) -> float | None:
        """Seconds asked by a `Retry-After` value (delta-seconds or HTTP date); None when
        absent or unreadable. A date in the past means 0."""
        if value is None:
            return None
        value = value.strip()
        if value.isdigit():
            return float(int(value[:12]))
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is None or when.tzinfo is None:
            return None
        return max(0.0, when.timestamp() - self.clock())


def pause(seconds: float) -> None:
    """The real wait between attempts (a module function, so tests can replace it)."""
    time.sleep(seconds)


def no_retries() -> RetryPolicy:
    """A policy that sends every request once."""
    return RetryPolicy(attempts=1)
