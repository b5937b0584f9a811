"""Row-chunk parallelism: numpy releases the GIL inside ufunc loops, so a small thread pool over
independent row chunks uses more than one core.

``QUANTCHECK_THREADS`` sets the thread count (default: the CPU count). Every chunk computes
its rows with the same operations in the same order whichever thread runs it, and chunks
never share a reduction, so results do not depend on the thread count. No codec calls BLAS.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

_POOLS: dict[int, ThreadPoolExecutor] = {}


def num_threads() -> int:
    """Threads used by the codecs."""
    try:
        return max(1, int(os.environ.get("QUANTCHECK_THREADS", "")))
    except ValueError:
        return max(1, os.cpu_count() or 1)


def chunks(n: int, step: int) -> Iterator[slice]:
    """Row slices of ``step`` rows covering ``range(n)``."""
    for r in range(0, n, step):
        yield slice(r, min(n, r + step))


def for_each(fn: Callable[[slice], None], n: int, step: int) -> None:
    """Run ``fn(rows)`` for every row chunk, on the thread pool when there is more than one."""
    parts = list(chunks(n, step))
    threads = min(num_threads(), len(parts))
    if threads <= 1:
        for p in parts:
            fn(p)
        return
    pool = _POOLS.get(threads)
    if pool is None:
        pool = _POOLS[threads] = ThreadPoolExecutor(threads, thread_name_prefix="quantcheck")
    for f in [pool.submit(fn, p) for p in parts]:
        f.result()
