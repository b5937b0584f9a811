"""Header-check benchmark (issues 2 and 3): quantcheck vs the floor, safetensors and torch.

    python benchmarks/bench_check.py [--keep] [--runs 5]

Makes the 19 GiB sparse checkpoint with make_big_checkpoint.py (3600 tensors, beside this file),
then measures in one run:
  floor      floor_read.py (beside this file): header read + json.loads + one read per marker
  ours       quantcheck's full check (all rules, both targets), in process
  safe_open  (b) safetensors.safe_open(framework="numpy"): get_slice per key, get_tensor per marker
  cli        the venv's `quantcheck check` console script as a whole process
  torch      (c) a process that imports torch and does (b) with framework="pt"
  gpu        quantcheck's check with --gpu rtx4090 and with --gpu all (every class of the
             table: per layer native / emulated for both targets), in process and as a CLI
             process, as ratios to the same run's check without --gpu
Medians of --runs warm runs; peak RSS of the CLI process. Prints a Markdown table of figures and
ratios for BENCHMARKS.md. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# sibling scripts, not a package
from floor_read import floor_read
from make_big_checkpoint import write as write_big_checkpoint

SAFE_OPEN = """
import sys
from safetensors import safe_open
def run(path, fw):
    meta, markers = {}, {}
    with safe_open(path, framework=fw) as f:
        for k in f.keys():
            s = f.get_slice(k)
            meta[k] = (s.get_dtype(), tuple(s.get_shape()))
            if k.endswith(".comfy_quant"):
                markers[k] = f.get_tensor(k)
    return meta, markers
"""


def median_ms(fn, runs: int) -> float:
    fn()  # warm
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def interleaved_ms(fns: list, runs: int) -> list[float]:
    """Median ms of each of `fns`, run in turn (one of each per round), so machine noise
    falls on all of them alike: their ratios are the figure."""
    for fn in fns:
        fn()  # warm
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, out in zip(fns, times, strict=True):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1000)
    return [statistics.median(t) for t in times]


def proc_ms(cmd: list[str], runs: int) -> tuple[float, float]:
    """Median wall time of a whole process and the largest peak RSS (MiB) of those runs."""
    subprocess.run(cmd, check=False, capture_output=True)  # warm
    times, peak = [], 0.0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t = time.perf_counter()
        subprocess.run(cmd, check=False, capture_output=True)
        times.append((time.perf_counter() - t) * 1000)
        peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    return statistics.median(times), peak / 1024


def child_peak_mib(cmd: list[str]) -> float:
    """Peak RSS of one fresh child (a new process so earlier children do not mask it)."""
    code = (
        "import resource,subprocess,sys;subprocess.run(sys.argv[1:],capture_output=True);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    return int(out.stdout.strip()) / 1024


def hostile_timings(runs: int) -> None:
    """Headers built to make a naive reader slow: must stay linear (figures, not asserts)."""
    import json
    import struct

    from quantcheck.io.header import read_header
    from quantcheck.io.source import MemorySource

    def file_of(hdr: dict, data: bytes) -> bytes:
        text = json.dumps(hdr).encode()
        text += b" " * (-len(text) % 8)
        return struct.pack("<Q", len(text)) + text + data

    cases = {
        "100,000 valid tensors": file_of(
            {
                f"blocks.{i}.w": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]}
                for i in range(100_000)
            },
            b"\0" * 100_000,
        ),
        "100,000 overlapping tensors": file_of(
            {
                f"t{i}": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}
                for i in range(100_000)
            },
            b"\0",
        ),
        "one shape of 100,000 dims of 2^62": file_of(
            {"w": {"dtype": "U8", "shape": [2**62] * 100_000, "data_offsets": [0, 0]}}, b""
        ),
    }
    for name, data in cases.items():
        ms = median_ms(lambda d=data: read_header(MemorySource(d)), runs)
        print(f"hostile header, {name}: {ms:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the sparse file")
    ap.add_argument("--file", help="use this checkpoint instead of generating one")
    ap.add_argument(
        "--hostile",
        action="store_true",
        help="also time hostile headers (100k tensors, 100k overlaps, 100k huge dims)",
    )
    ap.add_argument(
        "--report",
        action="store_true",
        help="also time the HTML report of the checkpoint (no --compare)",
    )
    args = ap.parse_args()
    tmp = None if args.file else tempfile.mkdtemp(prefix="qc-bench-")
    path = args.file or os.path.join(tmp, "big.safetensors")
    if tmp is not None:
        write_big_checkpoint(path)

    from quantcheck.checking import check_paths

    runs = args.runs
    floor = median_ms(lambda: floor_read([path]), runs)
    ours = median_ms(lambda: check_paths([path]), runs)
    ns: dict[str, object] = {}
    exec(SAFE_OPEN, ns)  # a fixed benchmark snippet
    safe = median_ms(lambda: ns["run"](path, "numpy"), runs)  # type: ignore[operator]
    exe = str(Path(sys.executable).with_name("quantcheck"))
    cli, _ = proc_ms([exe, "check", path], runs)
    cli_peak = child_peak_mib([exe, "check", path])
    torch_cmd = [sys.executable, "-c", SAFE_OPEN + f"\nimport torch\nrun({path!r}, 'pt')"]
    torch_ms, _ = proc_ms(torch_cmd, runs)
    from quantcheck.gpus import expand_specs

    one, every = expand_specs(["rtx4090"]), expand_specs(["all"])
    plain, gpu_one, gpu_all = interleaved_ms(
        [
            lambda: check_paths([path]),
            lambda: check_paths([path], gpus=one),
            lambda: check_paths([path], gpus=every),
        ],
        runs,
    )
    cli_plain, cli_all = interleaved_ms(
        [
            lambda: subprocess.run([exe, "check", path], check=False, capture_output=True),
            lambda: subprocess.run(
                [exe, "check", path, "--gpu", "all"], check=False, capture_output=True
            ),
        ],
        runs,
    )
    n = check_paths([path]).stats
    rows = [
        ("floor (header + json.loads + marker reads)", floor, "1.00x floor"),
        (
            "quantcheck check, in process",
            ours,
            f"{ours / floor:.2f}x floor; {safe / ours:.1f}x faster than safe_open",
        ),
        ("(b) safetensors safe_open numpy, in process", safe, f"{safe / floor:.1f}x floor"),
        ("quantcheck check, CLI process", cli, f"{torch_ms / cli:.1f}x faster than (c)"),
        ("(c) torch + safe_open pt, process", torch_ms, ""),
        ("quantcheck check, in process (interleaved with the two below)", plain, ""),
        ("quantcheck check --gpu rtx4090, in process", gpu_one, f"{gpu_one / plain:.2f}x check"),
        (
            f"quantcheck check --gpu all ({len(every)} classes), in process",
            gpu_all,
            f"{gpu_all / plain:.2f}x check",
        ),
        ("quantcheck check, CLI process (interleaved with the one below)", cli_plain, ""),
        (
            "quantcheck check --gpu all, CLI process (text: the matrix)",
            cli_all,
            f"{cli_all / cli_plain:.2f}x CLI check",
        ),
    ]
    print(
        f"checkpoint: {path} ({os.path.getsize(path) / 2**30:.1f} GiB sparse, "
        f"{n['tensors']} tensors, {n['markers']} markers); median of {runs} warm runs\n"
    )
    print("| measurement | ms | ratio |\n|---|---:|---|")
    for name, ms, ratio in rows:
        print(f"| {name} | {ms:.1f} | {ratio} |")
    print(f"\nCLI peak RSS: {cli_peak:.1f} MiB")
    if args.report:
        from quantcheck.render.html import build_report

        ms = median_ms(lambda: build_report([path]), runs)
        print(f"HTML report of the checkpoint (load + check + render): {ms:.1f} ms")
    if args.hostile:
        hostile_timings(runs)
    if tmp is not None and not args.keep:
        os.remove(path)
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
