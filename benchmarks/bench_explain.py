"""`quantcheck explain` on large pastes (issue 12 item 10): time of `match_message`.

    python benchmarks/bench_explain.py [--sizes 40000,80000,1000000] [--timeout 120]

Four pastes per size: a log with the sglang message at the end, the same bytes as one line,
a W4A8 shapes message whose list of shapes never ends (no match), and lines each holding the
first half of an INT8 message (no match). Each is timed in a child process
with a timeout (the quadratic matcher this replaced took hours on 1 MB). Not a test.
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
import sys, time
from quantcheck.explain.messages import match_message
text = sys.stdin.read()
t = time.perf_counter()
m = match_message(text)
print(f"{time.perf_counter() - t:.3f} {m.code if m else None}")
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
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="40000,80000,1000000")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    print("| paste | bytes | seconds | code |\n|---|---:|---:|---|")
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
            except subprocess.TimeoutExpired:
                secs, code = f"> {time.perf_counter() - t:.0f} (killed)", "-"
            print(f"| {kind} | {len(text):,} | {secs} | {code} |")


if __name__ == "__main__":
    main()
