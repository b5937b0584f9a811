"""Many-checkpoints benchmark (issue 15): `quantcheck check FOLDER` on 1,000 small checkpoints
against reading every header once.

    python benchmarks/bench_many.py [--count 1000] [--layers 16] [--runs 5] [--keep]
        [--folder DIR] [--src DIR] [--best] [--cpu] [--target T] [--cold] [--distinct]

Writes COUNT small FP8 checkpoints (LAYERS linear layers each: F8_E4M3 weight, F32 scale and a
`comfy_quant` marker tensor; quantcheck.io.build) into a temporary folder, then measures in one
run, warm page cache, medians of --runs:
  headers   open each file, read the 8-byte length and the header, json.loads it
  floor     benchmarks/floor_read.py per file: headers plus one read + json.loads per marker
  ours      `quantcheck check --quiet FOLDER` in process (discovery, every rule, the table),
            with the default `--jobs` (worker processes, one per CPU) and with `--jobs 1`
  cli       the same as a whole process (`python -m quantcheck`)
With --distinct the checkpoints' tensor names differ (same formats and shapes): work shared
across checkpoints by layer signature still applies, work shared by name list does not.
With --cold, the headers and both in-process checks are timed again with the folder's files
dropped from the page cache before each run (`posix_fadvise(DONTNEED)`; wall time): a models
folder of 10-40 GB files is rarely cached. The cold headers are read twice: one file after the
other, and with the read-ahead hints the check itself uses (the fairer floor for a cold disk).
Prints a Markdown table for BENCHMARKS.md. Not a test: nothing here asserts on time.

To compare two versions of the code on one machine state, generate the folder once
(`--keep`), then run this script alternately with `--folder DIR --src OLD/src` and
`--folder DIR --src NEW/src`; `--best` reports the fastest run instead of the median (on a
shared machine the fastest is the least disturbed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# sibling script, not a package
from floor_read import floor_read  # noqa: E402
from machine import cpu_name  # noqa: E402

#: the code measured: this checkout's src, or --src DIR (set before quantcheck is imported)
SRC = [str(HERE.parent / "src")]


def make_folder(folder: Path, count: int, layers: int, distinct: bool = False) -> int:
    """COUNT checkpoints of LAYERS FP8 layers each (a few per subfolder); total header bytes.
    `distinct`: every checkpoint names its layers differently (no two share a name list)."""
    from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors

    total = 0
    for i in range(count):
        sub = folder / f"group{i // 100:02d}"
        sub.mkdir(exist_ok=True)
        tensors = []
        for j in range(layers):
            p = f"model.diffusion_model.blocks.{j}.attn.qkv"
            if distinct:
                p = f"model.diffusion_model.m{i}.blocks.{j}.attn.qkv"
            tensors += [
                RawTensor(f"{p}.weight", "F8_E4M3", (64, 64), bytes(4096)),
                RawTensor(f"{p}.weight_scale", "F32", (), struct.pack("<f", 0.01)),
                marker_tensor(p, {"format": "float8_e4m3fn"}),
            ]
        path = sub / f"model_{i:04d}.safetensors"
        write_safetensors(path, tensors, {"producer": "bench_many"})
        with open(path, "rb") as f:
            total += 8 + struct.unpack("<Q", f.read(8))[0]
    return total


def read_headers(paths: list[str]) -> int:
    n = 0
    for p in paths:
        with open(p, "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            n += len(json.loads(f.read(size)))
    return n


def read_headers_hinted(paths: list[str]) -> int:
    """`read_headers` with the check's read-ahead: each file is hinted 16 files before it is
    read (`quantcheck.io.readahead`), so a cold disk serves several at once."""
    from quantcheck.io.readahead import WINDOW, hint

    for p in paths[:WINDOW]:
        hint(p)
    n = 0
    for i, p in enumerate(paths):
        if i + WINDOW < len(paths):
            hint(paths[i + WINDOW])
        with open(p, "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            n += len(json.loads(f.read(size)))
    return n


#: `--target` passed to `quantcheck check` (None: its default)
TARGET: list[str] = []


def ours(folder: str, *jobs: str) -> int:
    from quantcheck.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()):
        return main(["check", "--quiet", "--no-color", *TARGET, *jobs, folder])


def evict(paths: list[str]) -> None:
    """Drop the files from the page cache (clean pages only: `sync` first)."""
    os.sync()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def header_bytes(paths: list[str]) -> int:
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            total += 8 + struct.unpack("<Q", f.read(8))[0]
    return total


BEST = [False]
#: the clock: wall time, or (--cpu) CPU time of this process and its children, which a busy
#: shared machine disturbs far less than wall time (it leaves out the waits for a core)
CLOCK = [time.perf_counter]


def cpu_time() -> float:
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def timed(
    fn: Callable[[], object],
    runs: int,
    before: Callable[[], object] | None = None,
    clock: Callable[[], float] | None = None,
) -> float:
    """Milliseconds of `fn()` (median, or fastest with --best); `before()` runs untimed."""
    times: list[float] = []
    tick = clock or CLOCK[0]
    for _ in range(runs):
        if before is not None:
            before()
        t0 = tick()
        fn()
        times.append(tick() - t0)
    return (min(times) if BEST[0] else statistics.median(times)) * 1000


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the generated folder")
    ap.add_argument("--folder", type=Path, help="check this folder (made earlier with --keep)")
    ap.add_argument("--src", help="import quantcheck from this src folder")
    ap.add_argument("--best", action="store_true", help="fastest run instead of the median")
    ap.add_argument("--cpu", action="store_true", help="CPU time instead of wall time")
    ap.add_argument("--target", help="check for this --target (default: the CLI's default)")
    ap.add_argument("--cold", action="store_true", help="also time with the files not cached")
    ap.add_argument(
        "--distinct",
        action="store_true",
        help="every generated checkpoint names its layers differently (caches keyed by a "
        "checkpoint's name list then never hit)",
    )
    args = ap.parse_args(argv)
    if args.target:
        TARGET[:] = ["--target", args.target]
    BEST[0] = args.best
    if args.cpu:
        CLOCK[0] = cpu_time
    if args.src:
        SRC[0] = str(Path(args.src).resolve())
    sys.path.insert(0, SRC[0])
    given = args.folder is not None
    folder = args.folder if given else Path(tempfile.mkdtemp(prefix="bench_many_"))
    try:
        paths = sorted(str(p) for p in folder.rglob("*.safetensors"))
        if not given:
            make_folder(folder, args.count, args.layers, args.distinct)
            paths = sorted(str(p) for p in folder.rglob("*.safetensors"))
        header_total = header_bytes(paths)
        rc = ours(str(folder))
        assert rc == 0 or TARGET, f"the generated checkpoints should be clean (exit {rc})"
        ours(str(folder))  # warm: imports, page cache
        read_headers(paths)
        t_headers = timed(lambda: read_headers(paths), args.runs)
        t_floor = timed(lambda: [floor_read([p]) for p in paths], args.runs)
        t_ours = timed(lambda: ours(str(folder)), args.runs)
        t_one = timed(lambda: ours(str(folder), "--jobs", "1"), args.runs)
        env = {**os.environ, "PYTHONPATH": SRC[0]}
        cmd = [sys.executable, "-m", "quantcheck", "check", "--quiet", *TARGET, str(folder)]
        t_cli = timed(
            lambda: subprocess.run(cmd, env=env, capture_output=True, check=not TARGET), args.runs
        )
        n = len(paths)
        print(
            f"{cpu_name()}, {len(os.sched_getaffinity(0))} usable CPUs, load "
            f"{os.getloadavg()[0]:.1f}; "
            f"{n} checkpoints, headers {header_total:,} bytes in all; code from {SRC[0]}; "
            f"{'fastest' if args.best else 'medians'} of {args.runs} warm runs, "
            f"{'CPU' if args.cpu else 'wall'} time\n"
        )
        print("| measurement | ms | per checkpoint µs | ratio |")
        print("|---|---:|---:|---|")
        rows = [
            ("headers: open + read + `json.loads` of every header", t_headers, "1.00x"),
            (
                "floor: headers + one read + `json.loads` per marker (`floor_read.py`)",
                t_floor,
                f"{t_floor / t_headers:.2f}x headers",
            ),
            (
                "`quantcheck check --quiet FOLDER` in process (discovery, all rules, table)",
                t_ours,
                f"{t_ours / t_headers:.2f}x headers, {t_ours / t_floor:.2f}x floor",
            ),
            (
                "the same with `--jobs 1` (one process)",
                t_one,
                f"{t_one / t_headers:.2f}x headers, {t_one / t_floor:.2f}x floor",
            ),
            (
                "`quantcheck check --quiet FOLDER` as a process",
                t_cli,
                f"{t_cli / t_headers:.2f}x headers",
            ),
        ]
        if args.cold:
            wall = time.perf_counter
            c_headers = timed(lambda: read_headers(paths), args.runs, lambda: evict(paths), wall)
            c_hinted = timed(
                lambda: read_headers_hinted(paths), args.runs, lambda: evict(paths), wall
            )
            c_ours = timed(lambda: ours(str(folder)), args.runs, lambda: evict(paths), wall)
            c_one = timed(
                lambda: ours(str(folder), "--jobs", "1"), args.runs, lambda: evict(paths), wall
            )
            rows += [
                ("cold (wall time): headers", c_headers, "1.00x cold headers"),
                (
                    "cold: headers, read ahead as the check does",
                    c_hinted,
                    f"{c_hinted / c_headers:.2f}x",
                ),
                (
                    "cold: `quantcheck check --quiet FOLDER`",
                    c_ours,
                    f"{c_ours / c_headers:.2f}x, {c_ours / c_hinted:.2f}x read ahead",
                ),
                (
                    "cold: the same with `--jobs 1`",
                    c_one,
                    f"{c_one / c_headers:.2f}x, {c_one / c_hinted:.2f}x read ahead",
                ),
            ]
        for name, ms, ratio in rows:
            print(f"| {name} | {ms:.1f} | {ms * 1000 / n:.0f} | {ratio} |")
    finally:
        if args.keep and not given:
            print(f"\nkept {folder}")
        elif not given:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
