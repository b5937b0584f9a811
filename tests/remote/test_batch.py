"""map_bounded: input order, errors as values, bounded look-ahead, cancellation."""

from __future__ import annotations

import threading

import pytest

from quantcheck.io.batch import MAX_DEFAULT_JOBS, default_jobs, map_bounded

WAIT = 5.0


def test_results_in_input_order_even_when_later_items_finish_first() -> None:
    first_may_finish = threading.Event()
    finished: list[int] = []
    lock = threading.Lock()

    def fn(i: int) -> int:
        if i == 0:
            assert first_may_finish.wait(WAIT)
        with lock:
            finished.append(i)
            if len(finished) == 3:
                first_may_finish.set()  # items 1-3 finished before item 0
        return i * 10

    out = list(map_bounded(fn, range(6), jobs=4))
    assert out == [(i, i * 10) for i in range(6)]
    assert finished[0] != 0


@pytest.mark.parametrize("jobs", [1, 3])
def test_an_exception_is_the_result_of_its_item_only(jobs: int) -> None:
    def fn(i: int) -> int:
        if i % 2:
            raise OSError(f"bad {i}")
        return i

    out = list(map_bounded(fn, range(5), jobs=jobs))
    assert [i for i, _ in out] == [0, 1, 2, 3, 4]
    assert [r for _, r in out if not isinstance(r, Exception)] == [0, 2, 4]
    errs = [r for _, r in out if isinstance(r, Exception)]
    assert [str(e) for e in errs] == ["bad 1", "bad 3"]


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_is_called_once_per_item_in_order(jobs: int) -> None:
    seen: list[str] = []
    list(map_bounded(str.upper, ["a", "b", "c"], jobs=jobs, progress=seen.append))
    assert seen == ["a", "b", "c"]


def test_look_ahead_is_bounded() -> None:
    release = threading.Event()
    started: list[int] = []
    lock = threading.Lock()

    def fn(i: int) -> int:
        with lock:
            started.append(i)
        release.wait(WAIT)
        return i

    def items():  # an endless input: must never be read to its end
        i = 0
        while True:
            yield i
            i += 1

    gen = map_bounded(fn, items(), jobs=2)
    release.set()
    got = [next(gen) for _ in range(10)]
    gen.close()
    assert [i for i, _ in got] == list(range(10))
    assert len(started) <= 10 + 2 * 2


def test_leaving_the_loop_cancels_calls_not_started() -> None:
    gate = threading.Event()
    ran: list[int] = []
    lock = threading.Lock()

    def fn(i: int) -> int:
        with lock:
            ran.append(i)
        if i > 0:
            gate.wait(WAIT)
        return i

    gen = map_bounded(fn, range(100), jobs=2)
    assert next(gen) == (0, 0)
    gen.close()
    gate.set()
    assert len(ran) <= 1 + 2 * 2  # the look-ahead at most; the other ~95 never ran


def test_ctrl_c_in_the_caller_cancels_the_rest() -> None:
    ran: list[int] = []
    lock = threading.Lock()

    def fn(i: int) -> int:
        with lock:
            ran.append(i)
        return i

    def progress(i: int) -> None:
        if i == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        for _ in map_bounded(fn, range(100), jobs=2, progress=progress):
            pass
    assert len(ran) <= 2 + 2 * 2


def test_a_base_exception_in_fn_is_raised_not_returned() -> None:
    def fn(i: int) -> int:
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        list(map_bounded(fn, range(3), jobs=2))


def test_jobs_bounds() -> None:
    assert 1 <= default_jobs() <= MAX_DEFAULT_JOBS
    with pytest.raises(ValueError):
        map_bounded(str, [], jobs=0)
    with pytest.raises(ValueError):
        map_bounded(str, [], jobs=10_000)


def test_workers_never_hold_up_the_exit_of_an_interrupted_program() -> None:
    """Workers still blocked in I/O after Ctrl-C must not keep the interpreter alive."""
    gate = threading.Event()
    seen: list[threading.Thread] = []

    def fn(i: int) -> int:
        seen.append(threading.current_thread())
        if i > 0:
            gate.wait(WAIT)
        return i

    gen = map_bounded(fn, range(4), jobs=2)
    with pytest.raises(KeyboardInterrupt):
        for _ in gen:
            raise KeyboardInterrupt
    gate.set()
    assert seen and all(t.daemon for t in seen)
    assert len({id(t) for t in seen}) <= 2
