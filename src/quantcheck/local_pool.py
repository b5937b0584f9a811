"""Check many local checkpoints on worker processes (standard library only).

A local check is Python work on a header already in memory, so threads would queue on the GIL;
with several CPUs a folder's checkpoints are cut into contiguous chunks that worker processes
check, and the results come back pickled, in input order. The output is the same as checking
one after the other (each worker reuses marker decodes and format-rule findings across its own
checkpoints, as `check_many` does in one process; see `tests/test_local_pool.py`).

A pool is only started when it pays: at least `MIN_PER_PROCESS` checkpoints per worker, more
when workers must import quantcheck afresh (no `fork`). Nothing here is imported for a single
checkpoint or a small folder.

No worker outlives the run: Ctrl-C, SIGTERM and SIGHUP unwind the parent (exit 130, 143,
129), which ends the workers mid-chunk; a parent killed outright (SIGKILL) leaves workers that
the kernel ends with it (Linux) or that notice it is gone and exit (elsewhere).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import threading

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from quantcheck.model.discover import CheckpointSpec

    #: checks one spec with the run's options; never raises (`quantcheck.many.check_safely`)
    Check = Callable[[CheckpointSpec, dict[str, Any]], Any]

#: fewest checkpoints per worker process started by `fork` (about 20 ms of checking each:
#: a forked worker costs a few ms to start and its results ~30 µs per checkpoint to send back)
MIN_PER_PROCESS = 32
#: the same when workers start a fresh interpreter (`spawn`, ~0.2 s of imports each)
MIN_PER_PROCESS_SPAWN = 512
#: most checkpoints in one chunk (a chunk is the unit of work and of progress)
MAX_CHUNK = 64


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def start_method() -> str:
    """`fork` where it is safe and cheap (Linux, no other thread running), else `spawn`."""
    import multiprocessing

    safe = sys.platform.startswith("linux") and threading.active_count() == 1
    return "fork" if safe and "fork" in multiprocessing.get_all_start_methods() else "spawn"


def pool_size(count: int, jobs: int) -> int:
    """Worker processes for `count` local checkpoints and `--jobs` `jobs`: at most one per usable
    CPU, and 1 (check in this process) when the checkpoints are too few to pay for a pool."""
    procs = min(jobs, usable_cpus())
    if procs < 2 or count < 2 * MIN_PER_PROCESS:
        return 1
    per = MIN_PER_PROCESS if start_method() == "fork" else MIN_PER_PROCESS_SPAWN
    return max(1, min(procs, count // per))


def chunks_of(specs: list[CheckpointSpec], procs: int) -> list[list[CheckpointSpec]]:
    """Contiguous chunks, about eight per worker (so a slow chunk does not hold up the end)."""
    size = max(1, min(MAX_CHUNK, len(specs) // (8 * procs)))
    return [specs[i : i + size] for i in range(0, len(specs), size)]


def check_in_processes(
    specs: list[CheckpointSpec],
    procs: int,
    check: Check,
    options: dict[str, Any],
    advance: Callable[[CheckpointSpec, int], None],
    start: Callable[[], None] | None = None,
) -> list[Any]:
    """`check(spec, options)` for each spec on `procs` worker processes, results in input
    order; `start()` runs once in each worker. `check` and `start` must be module-level
    functions (workers receive them by name). `advance(last spec, n)` is called as each chunk's
    results arrive. A chunk whose results cannot be sent back, or that a dying worker took
    with it, is checked in this process."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from quantcheck.io.outpath import terminate_cleanly

    chunks = chunks_of(specs, procs)
    context = multiprocessing.get_context(start_method())
    out: list[Any] = []
    done = False
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the `finally` below ends the workers
    with terminate_cleanly():
        pool = ProcessPoolExecutor(
            procs, mp_context=context, initializer=_start_worker, initargs=(start, os.getpid())
        )
        try:
            futures = [pool.submit(_check_chunk, check, chunk, options) for chunk in chunks]
            for chunk, future in zip(chunks, futures, strict=True):
                try:
                    sent: bytes | None = future.result()
                except BrokenProcessPool:
                    sent = None
                out.extend(
                    pickle.loads(sent) if sent is not None else _check_here(check, chunk, options)
                )
                advance(chunk[-1], len(chunk))
            done = True
        finally:
            # done: the workers are idle, wait for them (no thread of the pool outlives the
            # call, so the next call may fork again); interrupted (Ctrl-C, SIGTERM, SIGHUP, a
            # defect): end the workers now, mid-chunk, so none outlives this process
            if not done:
                _end_workers(pool)
            pool.shutdown(wait=True, cancel_futures=not done)
    return out


def _end_workers(pool: Any) -> None:
    """Terminate the pool's worker processes (Python 3.14 has this as a method)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):  # already gone
            proc.terminate()


def _start_worker(start: Callable[[], None] | None, parent: int) -> None:
    """A worker leaves Ctrl-C to the parent (which stops the pool), takes SIGTERM and SIGHUP
    as plain ends again (a forked worker inherits the parent's handlers), dies with its
    parent (`_die_with`), then runs `start`."""
    import signal

    from quantcheck.io.outpath import SIGNALS

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for s in SIGNALS:
        signal.signal(s, signal.SIG_DFL)
    _die_with(parent)
    if start is not None:
        start()


#: whether the kernel can end a worker with its parent (Linux prctl PR_SET_PDEATHSIG)
PDEATHSIG = sys.platform.startswith("linux")
#: how often a worker without it looks whether its parent is still there (s)
PARENT_POLL = 0.5


def _die_with(parent: int) -> None:
    """End this worker when the process `parent` dies, however it dies (SIGKILL included):
    an orphan would hold stdout/stderr open for ever, blocked on a queue nobody feeds. On
    Linux the kernel sends SIGKILL (prctl PR_SET_PDEATHSIG); elsewhere a daemon thread
    polls `os.getppid()` every `PARENT_POLL` seconds."""
    if PDEATHSIG:
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0:  # 1: PR_SET_PDEATHSIG
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    import time

    while os.getppid() == parent:
        time.sleep(PARENT_POLL)
    os._exit(1)


def _check_chunk(
    check: Check, chunk: list[CheckpointSpec], options: dict[str, Any]
) -> bytes | None:
    """One chunk's results, pickled here so a result that cannot be pickled costs its chunk
    a second check in the parent, not the run."""
    results = _check_here(check, chunk, options)
    try:
        return pickle.dumps(results, pickle.HIGHEST_PROTOCOL)
    except Exception:  # a defect in some result type: the parent checks the chunk itself
        return None


def _check_here(check: Check, chunk: list[CheckpointSpec], options: dict[str, Any]) -> list[Any]:
    from quantcheck.io.readahead import read_ahead

    return [check(spec, options) for spec in read_ahead(chunk)]
