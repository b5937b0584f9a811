"""Local checkpoints checked on worker processes (`quantcheck.local_pool`) give the same report
as checking them one after the other, whatever happens to a worker; when a pool is started."""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from quantcheck import local_pool, many
from quantcheck.cli.main import main
from quantcheck.diagnostics import NO_DATA, Diagnostic
from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
from quantcheck.many import CheckpointResult, check_many
from quantcheck.model.discover import discover
from quantcheck.rules import codes as R

FORK = "fork" in __import__("multiprocessing").get_all_start_methods()


@pytest.fixture
def folder(tmp_path: Path, examples_dir: Path) -> Path:
    """Every example three times, layers with findings, a plain BF16 file, a truncated file, a
    dangling link."""
    root = tmp_path / "models"
    for sub in ("a", "b", "c"):
        (root / sub).mkdir(parents=True)
        for f in sorted(examples_dir.glob("*.safetensors")):
            shutil.copy(f, root / sub / f"{sub}_{f.name}")
    for i in range(4):
        tensors: list[RawTensor] = []
        for j in range(i + 1):
            p = f"blocks.{j}.attn"
            tensors += [
                RawTensor(f"{p}.weight", "F8_E4M3", (16, 16), bytes(256)),
                marker_tensor(p, {"format": "float8_e4m3fn", "made_up_key": i}),
            ]
        write_safetensors(root / f"noscale_{i}.safetensors", tensors)
    write_safetensors(root / "vae.safetensors", [RawTensor("decoder.w", "BF16", (4, 4), bytes(32))])
    whole = (examples_dir / "fp8_e4m3fn.safetensors").read_bytes()
    (root / "truncated.safetensors").write_bytes(whole[: len(whole) // 2])
    (root / "gone.safetensors").symlink_to(root / "nowhere.safetensors")  # cannot be opened
    return root


def in_pool(
    specs: list[Any], options: dict[str, Any] | None = None, advance: Any = None
) -> list[CheckpointResult]:
    """What `check_many` does with a pool of two workers."""
    return local_pool.check_in_processes(
        specs,
        2,
        many.check_safely,
        options or {},
        advance or (lambda s, n: None),
        start=many._start_sharing,
    )


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers made by fork even when another test left a thread running, so they inherit
    this test's patches."""
    if not FORK:
        pytest.skip("needs fork")
    monkeypatch.setattr(local_pool, "start_method", lambda: "fork")


def run_cli(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    return code, out.getvalue()


@pytest.fixture
def pool_used(monkeypatch: pytest.MonkeyPatch, forked: None) -> list[int]:
    """Start a pool for a folder of a few dozen checkpoints on any machine (even one CPU);
    the list records the number of workers of each pool started."""
    monkeypatch.setattr(local_pool, "usable_cpus", lambda: 4)
    monkeypatch.setattr(local_pool, "MIN_PER_PROCESS", 2)
    started: list[int] = []
    real = local_pool.check_in_processes

    def counting(specs: Any, procs: int, *args: Any, **kw: Any) -> Any:
        started.append(procs)
        return real(specs, procs, *args, **kw)

    monkeypatch.setattr(local_pool, "check_in_processes", counting)
    return started


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_pool_report_equals_one_at_a_time(fmt: str, folder: Path, pool_used: list[int]) -> None:
    alone = run_cli(["check", "--format", fmt, "--jobs", "1", str(folder)])
    assert pool_used == []
    pooled = run_cli(["check", "--format", fmt, "--jobs", "3", str(folder)])
    assert pool_used == [3]
    assert pooled == alone
    assert alone[0] == 2  # the dangling link could not be read: the worst exit code
    if fmt == "json":
        doc = __import__("json").loads(alone[1])
        kinds = [c["kind"] for c in doc["checkpoints"]]
        assert kinds.count("not-quantized") == 1 and kinds.count("checked") >= 28
        assert len(doc["diagnostics"]) > 40  # the findings are real


def test_pool_under_spawn_equals_one_at_a_time(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers that import quantcheck afresh (macOS, Windows, a process with threads) need
    nothing from the parent but the pickled specs and options."""
    monkeypatch.setattr(local_pool, "start_method", lambda: "spawn")
    specs = discover([str(folder)])
    options: dict[str, Any] = {"target": "all"}
    alone = [r.to_json() for r in check_many(specs, **options)]
    pooled = in_pool(specs, options)
    assert [r.to_json() for r in pooled] == alone


def in_worker_only(monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    """`check_spec` as usual, with `change(spec, check)` in worker processes only."""
    parent, real = os.getpid(), many.check_spec

    def patched(spec: Any, **options: Any) -> CheckpointResult:
        if os.getpid() == parent:
            return real(spec, **options)
        return change(spec, lambda: real(spec, **options))  # type: ignore[no-any-return]

    monkeypatch.setattr(many, "check_spec", patched)


def test_dead_worker_chunks_are_checked_here(
    folder: Path, monkeypatch: pytest.MonkeyPatch, forked: None
) -> None:
    specs = discover([str(folder)])
    alone = [r.to_json() for r in check_many(specs)]

    def dies(spec: Any, check: Any) -> CheckpointResult:
        if spec.name.endswith("nvfp4.safetensors"):
            os._exit(3)  # a worker killed mid-chunk (e.g. by the OOM killer)
        return check()  # type: ignore[no-any-return]

    in_worker_only(monkeypatch, dies)
    progress: list[int] = []
    pooled = in_pool(specs, advance=lambda s, n: progress.append(n))
    assert [r.to_json() for r in pooled] == alone
    assert sum(progress) == len(specs)


def test_unpicklable_result_is_checked_here(
    folder: Path, monkeypatch: pytest.MonkeyPatch, forked: None
) -> None:
    specs = discover([str(folder)])
    alone = [r.to_json() for r in check_many(specs)]

    def unpicklable(spec: Any, check: Any) -> CheckpointResult:
        result: CheckpointResult = check()
        result.suppressed = [threading.Lock()]  # cannot be pickled
        return result

    in_worker_only(monkeypatch, unpicklable)
    assert [r.to_json() for r in in_pool(specs)] == alone


def test_defect_in_worker_is_that_checkpoints_error(
    folder: Path, monkeypatch: pytest.MonkeyPatch, forked: None
) -> None:
    specs = discover([str(folder)])
    real = many.check_spec

    def raises(spec: Any, **options: Any) -> CheckpointResult:
        if spec.name.endswith("a_mxfp8.safetensors"):
            raise ZeroDivisionError("a defect")
        return real(spec, **options)

    monkeypatch.setattr(many, "check_spec", raises)
    pooled = in_pool(specs)
    assert len(pooled) == len(specs)
    bad = [r for r in pooled if r.error is not None and "ZeroDivisionError" in r.error]
    wanted = [s.name for s in specs if s.name.endswith("a_mxfp8.safetensors")]
    assert [r.spec.name for r in bad] == wanted
    assert bad[0].exit_code(None) == 2


def test_pool_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_pool, "usable_cpus", lambda: 4)
    monkeypatch.setattr(local_pool, "start_method", lambda: "fork")
    per = local_pool.MIN_PER_PROCESS
    assert local_pool.pool_size(1000, 8) == 4  # one per CPU at most
    assert local_pool.pool_size(1000, 2) == 2  # never more than --jobs
    assert local_pool.pool_size(1000, 1) == 1
    assert local_pool.pool_size(2 * per - 1, 8) == 1  # too few to pay for a pool
    assert local_pool.pool_size(3 * per, 8) == 3
    monkeypatch.setattr(local_pool, "start_method", lambda: "spawn")
    assert local_pool.pool_size(1000, 8) == 1  # fresh interpreters cost more than 1,000 checks
    assert local_pool.pool_size(4 * local_pool.MIN_PER_PROCESS_SPAWN, 8) == 4
    monkeypatch.setattr(local_pool, "usable_cpus", lambda: 1)
    assert local_pool.pool_size(100_000, 8) == 1


def test_fork_only_without_other_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (FORK and os.uname().sysname == "Linux"):
        assert local_pool.start_method() == "spawn"
        return
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert local_pool.start_method() == "fork"
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert local_pool.start_method() == "spawn"


def test_chunks_keep_order_and_cover_everything() -> None:
    specs: list[Any] = list(range(1000))
    chunks = local_pool.chunks_of(specs, 2)
    assert [s for c in chunks for s in c] == specs
    assert len(chunks) >= 16 and max(map(len, chunks)) <= local_pool.MAX_CHUNK
    assert max(map(len, local_pool.chunks_of(specs * 100, 2))) == local_pool.MAX_CHUNK
    assert local_pool.chunks_of(specs[:5], 4) == [[s] for s in specs[:5]]


def test_library_default_checks_in_this_process(folder: Path, pool_used: list[int]) -> None:
    check_many(discover([str(folder)]))  # jobs=1: the library call's contract
    assert pool_used == []


def test_diagnostic_pickles_and_shares_no_data() -> None:
    plain = Diagnostic(R.QC301, "m", file="f", tensor="t")
    with_data = Diagnostic(R.QC301, "m", data={"k": [1, 2]})
    for d in (plain, with_data):
        back = pickle.loads(pickle.dumps(d))
        assert back == d and back.code == "QC301"
    assert pickle.loads(pickle.dumps(plain)).data is NO_DATA
    assert pickle.loads(pickle.dumps(with_data)).data == {"k": [1, 2]}


def test_results_pickle_with_their_reports(folder: Path) -> None:
    results = check_many(discover([str(folder)]), target="all")
    back = pickle.loads(pickle.dumps(results))
    assert [r.to_json() for r in back] == [r.to_json() for r in results]
    assert [r.status("sglang") for r in back] == [r.status("sglang") for r in results]


def test_no_pool_thread_outlives_the_call(folder: Path, forked: None) -> None:
    """A finished pool leaves no thread behind, so the next run may fork again."""
    before = threading.active_count()
    in_pool(discover([str(folder)]))
    assert threading.active_count() == before


# -------------------------------------------------------------- signals: no worker outlives the run

#: `quantcheck check` with a pool on any machine (fork, two workers, a pool for few files) and
#: each check in a worker slowed (it first leaves a mark named by its pid in argv[1]), so that
#: a signal arrives while the workers are busy. Patched here, in the child: no hook in the code.
SLOW_POOL_CHECK = """
import os, sys, time
from quantcheck import local_pool, many
from quantcheck.cli.main import main
local_pool.usable_cpus = lambda: 2
local_pool.start_method = lambda: "fork"
local_pool.MIN_PER_PROCESS = 2
local_pool.PDEATHSIG = sys.argv.pop(2) == "prctl"  # else the watchdog thread (not Linux)
parent, real, marks = os.getpid(), many.check_spec, sys.argv[1]
def slow(spec, **options):
    if os.getpid() != parent:
        open(os.path.join(marks, str(os.getpid())), "w").close()
        time.sleep(0.5)
    return real(spec, **options)
many.check_spec = slow
sys.exit(main(sys.argv[2:]))
"""

#: hang guard for the waits below (the property asserted is "gone and EOF", not a duration)
GUARD = 60.0


def _children(pid: int) -> set[int]:
    """The child processes of `pid` (Linux /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found.update(int(c) for c in task.read_text().split())
    return found


def _alive(pid: int, since: str) -> bool:
    """Whether `pid` is still the process that started at `since` and is not a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z" and fields[19] == since


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


@pytest.mark.skipif(
    not (FORK and Path("/proc/self/task").is_dir()), reason="needs fork and Linux /proc"
)
@pytest.mark.parametrize(
    ("sig", "notice"),
    [
        ("SIGTERM", "prctl"),
        ("SIGHUP", "prctl"),
        ("SIGINT", "prctl"),
        ("SIGKILL", "prctl"),
        ("SIGKILL", "watchdog"),
    ],
)
def test_signal_to_check_leaves_no_worker(sig: str, notice: str, tmp_path: Path) -> None:
    """A `check` of 80 files on worker processes gets `sig` mid-run: every worker is gone
    soon after, and stdout and stderr reach EOF (an orphan holding them would make a CI step
    that reads the output wait for ever). SIGKILL gives the parent no chance to clean up: the
    workers notice their parent died and exit (the kernel tells them on Linux; elsewhere a
    watchdog thread in each worker polls its parent)."""
    import signal
    import subprocess
    import sys
    import time

    folder = tmp_path / "models"
    folder.mkdir()
    for i in range(80):
        write_safetensors(
            folder / f"m{i:02d}.safetensors",
            [
                RawTensor("blocks.0.attn.weight", "F8_E4M3", (16, 16), bytes(256)),
                RawTensor("blocks.0.attn.weight_scale", "F32", (), bytes(4)),
                marker_tensor("blocks.0.attn", {"format": "float8_e4m3fn"}),
            ],
        )
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SLOW_POOL_CHECK,
            str(marks),
            notice,
            "check",
            "--jobs",
            "2",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    workers: dict[int, str] = {}
    try:
        end = time.monotonic() + GUARD
        while len({int(p.name) for p in marks.iterdir()}) < 2 and time.monotonic() < end:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        for pid in _children(proc.pid) | {int(p.name) for p in marks.iterdir()}:
            with contextlib.suppress(OSError):
                workers[pid] = _start_time(pid)
        assert len(workers) >= 2, "the pool did not start"
        os.kill(proc.pid, getattr(signal, sig))
        try:
            _out, err = proc.communicate(timeout=GUARD)  # EOF on both pipes, parent reaped
        except subprocess.TimeoutExpired:
            pytest.fail(f"stdout/stderr still open {GUARD:.0f} s after {sig}: orphaned workers")
        while any(_alive(p, t) for p, t in workers.items()) and time.monotonic() < end + GUARD:
            time.sleep(0.05)
        assert not [p for p, t in workers.items() if _alive(p, t)]
        want = {"SIGTERM": 143, "SIGHUP": 129, "SIGINT": 130, "SIGKILL": -9}[sig]
        assert proc.returncode == want, err
        if sig in ("SIGTERM", "SIGHUP"):
            assert b"quantcheck: terminated" in err
    finally:  # whatever happened: nothing this test started keeps running
        for pid, t in workers.items():
            if _alive(pid, t):
                os.kill(pid, 9)
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
