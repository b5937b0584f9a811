"""Peak memory of `quantcheck quantize` (not a test) against the issue-5 bound: within 3x the
F32 size of the largest layer, above the process's baseline.

For each format a fresh child process builds the plan (imports, header, numpy loaded and warmed
up on a tiny layer), records VmRSS as the baseline, resets the kernel's peak counter
(/proc/self/clear_refs = 5), runs the streaming write, and reports VmHWM - baseline. The input
is a BF16 checkpoint with several layers; the largest is --shape.

    .venv/bin/python benchmarks/bench_convert.py [--shape 4096x4096] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

FORMATS = [
    ("float8_e4m3fn", []),
    ("int8_tensorwise", []),
    ("nvfp4", []),
    ("mxfp8", []),
    ("asym_w4a8_int8", []),
    ("convrot_w4a4", []),
    ("int8_tensorwise", ["--convrot-groupsize", "16"]),
    ("convrot_w4a4", ["--convrot-groupsize", "64"]),
]

CHILD = r"""
import json, os, sys, time
import numpy as np
from quantcheck.cli.main import main

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0

src, out, fmt = sys.argv[1:4]
extra = sys.argv[4:]
from quantcheck.numeric import quantize
warm = {"convrot": True} if fmt.startswith("int8") else {}
quantize(np.ones((256, 256), np.float32), fmt, **warm)
import quantcheck.cli.convert as conv
orig = conv._write
result = {}
def measured(*a, **kw):
    base = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    t = time.perf_counter()
    rc = orig(*a, **kw)
    result.update(base=base, peak=status("VmHWM") - base, seconds=time.perf_counter() - t)
    return rc
conv._write = measured
rc = main(["quantize", src, "-o", out, "--to", fmt, "--target", "comfyui", *extra])
print(json.dumps({"rc": rc, **result}))
"""


def build(path: str, n: int, k: int) -> None:
    import ml_dtypes
    import numpy as np

    from quantcheck.io.build import RawTensor
    from quantcheck.io.writer import Data, OutFile, OutTensor
    from quantcheck.model.written import write_checkpoint

    rng = np.random.default_rng(0)
    shapes = [(n, k), (n // 2, k), (n, k // 2), (n // 4, k // 4)]
    ts = []
    for i, (r, c) in enumerate(shapes):
        w = (rng.standard_normal((r, c), np.float32) * 0.05).astype(ml_dtypes.bfloat16)
        ts.append(OutTensor(f"blocks.{i}.linear.weight", "BF16", (r, c), Data(w.tobytes())))
    del RawTensor
    write_checkpoint([OutFile("m", ts)], path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="4096x4096")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    n, k = (int(x) for x in args.shape.split("x"))
    f32 = n * k * 4
    rows = []
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in.safetensors")
        build(src, n, k)
        for fmt, extra in FORMATS:
            out = os.path.join(d, f"{fmt}.safetensors")
            t = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, src, out, fmt, *extra],
                capture_output=True,
                text=True,
                check=True,
            )
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(
                (
                    " ".join([fmt, *extra]),
                    res["peak"] / 2**20,
                    res["peak"] / f32,
                    res["seconds"],
                    time.perf_counter() - t,
                )
            )
    print(f"largest layer {n}x{k} BF16; its F32 size {f32 / 2**20:.0f} MiB; bound 3.00x")
    if args.markdown:
        print("\n| format | peak above baseline (MiB) | x F32 of largest layer | write s |")
        print("|---|---|---|---|")
    for fmt, mib, ratio, secs, _ in rows:
        if args.markdown:
            print(f"| {fmt} | {mib:.0f} | {ratio:.2f} | {secs:.1f} |")
        else:
            print(f"{fmt:40} peak {mib:8.1f} MiB  {ratio:5.2f}x  write {secs:6.1f} s")


if __name__ == "__main__":
    main()
