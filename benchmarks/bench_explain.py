"""`quantcheck explain` on large pastes (issue 12 item 10, issue 21 K): the CLI's time.

    python benchmarks/bench_explain.py [--sizes 20000,80000,100000,960000] [--timeout 120]

Each paste is given to `quantcheck explain` (the CLI's `main`, in a child process that reads
the paste from stdin: one argument over 128 KiB is more than Linux lets `exec` pass) with a
timeout. "explain s" is the time of `main(["explain", paste])`, "process s" the child's wall
time with interpreter start-up. Pastes: a log with the sglang message at the end, the same
bytes as one line, a W4A8 shapes message whose list of shapes never ends, lines each holding
the first half of an INT8 message, and one character repeated (backticks, `x`, quotes). Not a
test (tests/test_explain_linear.py compares work across sizes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

MESSAGE = (
    "ValueError: Comfy INT8 layer 'blocks.0.attn.qkv' needs I8 weights and F32 scales, "
    "got BF16 and F32"
)
CHILD = """
import contextlib, io, sys, time
from quantcheck.cli.main import main
text = sys.stdin.read()
t = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()) as out:
    rc = main(["explain", text])
code = out.getvalue().split("Rule: ", 1)[1].split()[0] if rc == 0 else None
print(f"{time.perf_counter() - t:.3f} {code}")
"""


def pastes(size: int) -> dict[str, str]:
    line = "2025-01-01 12:00:00 INFO loading shard model-00001-of-00004.safetensors\n"
    log = line * (size // len(line)) + MESSAGE + "\n"
    start = "Comfy W4A8 layer 'x' has incompatible weight/scale shapes: "
    shapes = start + "(8, 1), " * ((size - len(start)) // 8)  # never ", and ": no match
    half = "Comfy INT8 layer 'x' needs I8 weights and F32 scales, got BF16\n"
    return {
        "log, message last": log,
        "log as one line": log.replace("\n", " "),
        "unfinished shapes message": shapes,
        "repeated half messages": half * (size // len(half)),
        "backticks": "`" * size,
        "x repeated": "x" * size,
        "single quotes": "'" * size,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,80000,100000,960000")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    print("| paste | bytes | explain s | process s | code |\n|---|---:|---:|---:|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        for kind, text in pastes(size).items():
            t = time.perf_counter()
            try:
                out = subprocess.run(
                    [sys.executable, "-c", CHILD],
                    input=text,
                    text=True,
                    capture_output=True,
                    timeout=args.timeout,
                    check=True,
                )
                secs, code = out.stdout.split()
                wall = f"{time.perf_counter() - t:.3f}"
            except subprocess.TimeoutExpired:
                secs, code, wall = f"> {args.timeout:.0f} (killed)", "-", "-"
            print(f"| {kind} | {len(text):,} | {secs} | {wall} | {code} |")


if __name__ == "__main__":
    main()
