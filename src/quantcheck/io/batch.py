"""Run one function over many inputs on a bounded thread pool (standard library only).

`map_bounded(fn, items, jobs)` yields `(item, result)` in input order, where `result` is what
`fn(item)` returned or the `Exception` it raised: one bad input never stops the others.
At most `2 × jobs` calls are submitted ahead of the one being yielded, so an iterable of
millions of inputs is never materialised. Ctrl-C (or the caller leaving the loop) cancels
every call not yet started; calls already running finish on their own, bounded by their I/O
timeouts (threads cannot be killed). The workers are daemon threads, so an interrupted
program exits at once instead of waiting for them.

Threads, not processes: remote checks are latency-bound (a few small HTTP requests each), so
they overlap well under the GIL, and a result need not be picklable.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import TypeVar

from quantcheck.io.limits import MAX_DEFAULT_JOBS, MAX_JOBS, default_jobs

__all__ = ["MAX_DEFAULT_JOBS", "MAX_JOBS", "default_jobs", "map_bounded"]
T = TypeVar("T")
R = TypeVar("R")


def map_bounded(
    fn: Callable[[T], R],
    items: Iterable[T],
    jobs: int | None = None,
    progress: Callable[[T], None] | None = None,
) -> Iterator[tuple[T, R | Exception]]:
    """`(item, fn(item) or the Exception it raised)` for each item, in input order.

    `jobs` threads at most (default `default_jobs()`); `jobs=1` runs in the calling thread.
    `progress(item)` is called in the calling thread as each item's result is yielded.
    """
    jobs = default_jobs() if jobs is None else jobs
    if not 1 <= jobs <= MAX_JOBS:
        raise ValueError(f"jobs must be between 1 and {MAX_JOBS}, got {jobs}")
    if jobs == 1:
        return _inline(fn, items, progress)
    return _threaded(fn, items, jobs, progress)


def _inline(
    fn: Callable[[T], R], items: Iterable[T], progress: Callable[[T], None] | None
) -> Iterator[tuple[T, R | Exception]]:
    for item in items:
        result: R | Exception
        try:
            result = fn(item)
        except Exception as exc:  # handed to the caller with its item
            result = exc
        if progress is not None:
            progress(item)
        yield item, result


def _threaded(
    fn: Callable[[T], R], items: Iterable[T], jobs: int, progress: Callable[[T], None] | None
) -> Iterator[tuple[T, R | Exception]]:
    it = iter(items)
    work: queue.SimpleQueue[tuple[T, Future[R]] | None] = queue.SimpleQueue()
    threads: list[threading.Thread] = []
    pending: deque[tuple[T, Future[R]]] = deque()

    def worker() -> None:
        while (job := work.get()) is not None:
            item, fut = job
            if not fut.set_running_or_notify_cancel():
                continue  # cancelled before it started
            try:
                fut.set_result(fn(item))
            except BaseException as exc:  # handed to the caller with its item
                fut.set_exception(exc)

    try:
        while True:
            while len(pending) < 2 * jobs:
                try:
                    item = next(it)
                except StopIteration:
                    break
                fut: Future[R] = Future()
                pending.append((item, fut))
                work.put((item, fut))
                if len(threads) < min(jobs, len(pending)):
                    t = threading.Thread(target=worker, name="quantcheck-job", daemon=True)
                    t.start()
                    threads.append(t)
            if not pending:
                return
            item, fut = pending.popleft()
            exc = fut.exception()  # waits; Ctrl-C interrupts the wait
            if exc is not None and not isinstance(exc, Exception):
                raise exc  # SystemExit or the like inside fn: not an input's failure
            if progress is not None:
                progress(item)
            yield item, (exc if exc is not None else fut.result())
    finally:
        for _, fut in pending:
            fut.cancel()
        for _ in threads:
            work.put(None)  # each worker stops after its current call
