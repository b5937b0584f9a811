"""Row-chunk parallelism: numpy releases the GIL inside ufunc loops and BLAS calls, so a small
thread pool over independent row chunks uses more than one core.

``QUANTCHECK_THREADS`` sets the thread count (default: the CPU count). Work that calls BLAS
(the Hadamard matmuls) runs in the pool only if numpy's OpenBLAS exposes
``openblas_set_num_threads_local``: each pool thread then limits its own BLAS calls to one
thread (no oversubscription; the process-wide setting is untouched). Otherwise it runs serially
on the calling thread with OpenBLAS's own threads.
"""

from __future__ import annotations

import ctypes
import functools
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


@functools.cache
def _blas_local() -> Callable[[int], int] | None:
    """``openblas_set_num_threads_local`` of the OpenBLAS numpy loaded, if any."""
    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))  # make sure BLAS is loaded
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower()}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            fn = ctypes.CDLL(path).openblas_set_num_threads_local
        except (OSError, AttributeError):
            continue
        fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
        return fn
    return None


def _init_worker() -> None:
    fn = _blas_local()
    if fn is not None:
        fn(1)


def chunks(n: int, step: int) -> Iterator[slice]:
    """Row slices of ``step`` rows covering ``range(n)``."""
    for r in range(0, n, step):
        yield slice(r, min(n, r + step))


def for_each(fn: Callable[[slice], None], n: int, step: int, blas: bool = False) -> None:
    """Run ``fn(rows)`` for every row chunk, on the thread pool when it pays off."""
    parts = list(chunks(n, step))
    threads = min(num_threads(), len(parts))
    if threads > 1 and blas and _blas_local() is None:
        threads = 1
    if threads <= 1:
        local = _blas_local() if blas else None
        previous = local(1) if local is not None else None  # small matmuls: one BLAS thread
        try:
            for p in parts:
                fn(p)
        finally:
            if local is not None and previous is not None:
                local(previous)
        return
    pool = _POOLS.get(threads)
    if pool is None:
        pool = _POOLS[threads] = ThreadPoolExecutor(
            threads, thread_name_prefix="quantcheck", initializer=_init_worker)
    for f in [pool.submit(fn, p) for p in parts]:
        f.result()
