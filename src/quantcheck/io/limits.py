"""Limits of one run's remote reads: bytes per checkpoint (`--max-bytes`, shared by all its
shards) and concurrent reads (`--jobs`). Cheap to import: the CLI reads them before knowing
whether any input is remote."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: most bytes one remote checkpoint (all its shards) may cost by default (header, markers,
#: --deep scales); a check that needs more fails with a clear error instead of turning into a
#: large download.
MAX_BYTES = 64 * 1024 * 1024
#: most concurrent reads by default: about what a browser opens to one host (6-8), polite to a
#: hub that rate-limits, and enough to hide 50-100 ms of latency per request.
MAX_DEFAULT_JOBS = 8
#: a hard ceiling for `--jobs`: more threads than this only add contention and server load.
MAX_JOBS = 64
#: the byte cap of every remote checkpoint opened from now on (None: no cap).
_BYTE_CAP: list[int | None] = [MAX_BYTES]


class ByteBudget:
    """Bytes one checkpoint may still fetch, shared by its shards' sources (thread-safe)."""

    __slots__ = ("_lock", "limit", "used")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def spend(self, n: int) -> bool:
        """Count `n` bytes read; False once the total is past the limit."""
        with self._lock:
            self.used += n
            return self.limit is None or self.used <= self.limit

    def allows(self, more: int) -> bool:
        """Whether `more` bytes can still be asked for."""
        return self.limit is None or self.used + more <= self.limit

    def left(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)


#: the budget of the checkpoint being opened (None: each remote file gets its own).
_CURRENT: ContextVar[ByteBudget | None] = ContextVar("quantcheck_byte_budget", default=None)


def current_budget() -> ByteBudget:
    """The budget of the checkpoint being opened (`checkpoint_budget`), else a fresh one."""
    return _CURRENT.get() or ByteBudget(byte_cap())


@contextmanager
def checkpoint_budget(budget: ByteBudget | None = None) -> Iterator[ByteBudget]:
    """Remote files opened inside the block (in this thread) share one byte budget: the cap
    bounds a checkpoint, not each of its shards. Pass `budget` to join one from another
    thread (shards opened concurrently)."""
    budget = budget or _CURRENT.get() or ByteBudget(byte_cap())
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def default_jobs() -> int:
    """min(8, 4 × CPUs): latency-bound work wants more threads than CPUs, but not many more
    than one host should be asked to serve at once."""
    return max(1, min(MAX_DEFAULT_JOBS, 4 * (os.cpu_count() or 1)))


def byte_cap() -> int | None:
    """Most bytes a remote checkpoint may cost (default 64 MiB; `set_byte_cap` changes it)."""
    return _BYTE_CAP[0]


def set_byte_cap(limit: int | None) -> int | None:
    """Set the byte cap of remote checkpoints opened from now on (all threads); the old one
    back."""
    if limit is not None and limit < 16:
        raise ValueError(f"byte cap {limit} is below 16 bytes")
    old, _BYTE_CAP[0] = _BYTE_CAP[0], limit
    return old


def parse_byte_count(text: str) -> int | None:
    """A byte count with an optional K, M, G or T suffix (×1024; KB, KiB, MB… accepted too);
    `none` (or `unlimited`) is no cap: None."""
    if text.strip().lower() in ("none", "unlimited"):
        return None
    raw = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(raw[-1:], 1)
    digits = raw[:-1] if scale > 1 else raw
    if not digits.isdigit() or not 16 <= int(digits) * scale <= 1 << 50:
        raise ValueError(f"{text!r} is not a byte count of at least 16 (e.g. 64M, 500K) or none")
    return int(digits) * scale


@contextmanager
def remote_limits(max_bytes: str, jobs: int | None) -> Iterator[int]:
    """The CLI's `--max-bytes SIZE` and `--jobs N` for one run: the byte cap holds while the
    block runs (the old one is restored after); yields the number of jobs. Bad values are
    usage errors (`InputError`, exit 2)."""
    from quantcheck.errors import InputError

    try:
        cap = parse_byte_count(max_bytes)
    except ValueError as exc:
        raise InputError(f"--max-bytes: {exc}") from None
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise InputError(f"--jobs: {jobs} is not between 1 and {MAX_JOBS}")
    old = set_byte_cap(cap)
    try:
        yield default_jobs() if jobs is None else jobs
    finally:
        set_byte_cap(old)
