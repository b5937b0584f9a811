"""Rotation benchmark (not a test): the rotated formats of issue 28 by two routes — the
radix-4 butterflies quantcheck uses (``bfly``) and the measured alternative of
``rotation_gemm.py`` (``gemm``: the groups whose sums are provably exact go through BLAS,
groups of 256 as two 16-term stage pairs; same bits) — against comfy-kitchen's CPU eager
backend, plus the rotation alone against torch's BF16 matmul ``x @ H^T`` (what
comfy-kitchen does).

MB/s of BF16 input (N*K*2 bytes), best of ``--repeat`` runs, the three sides interleaved in
one process (load noise hits all of them), torch.set_num_threads(--threads) and
QUANTCHECK_THREADS set to the same count. Dequantize writes F32 on every side.

    .venv/bin/python benchmarks/bench_rotation.py [--shape 3072x3072] [--threads 2]
        [--repeat 3] [--rotate-only] [--cases issue|all] [--clock wall|cpu] [--markdown]
        [--reference FILE]

``--cases issue`` runs the rows of the issue's table (ConvRot 256, convrot_w4a4 256,
asymmetric W4A8, int8 and nvfp4 without rotation); ``all`` (default) every rotated format at
group sizes 16, 64 and 256 and the non-rotated formats. ``--reference FILE`` times another
version of numeric/hadamard.py (e.g. ``git show main:src/quantcheck/numeric/hadamard.py >
/tmp/ref.py``) against ours, rotate() alone on one thread, interleaved, best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

from bench_numeric import _best_pair, _ck_calls, _label, _weights
from machine import cpu_name

ROTATED = [
    (fmt, {**opts, "convrot_groupsize": g})
    for fmt, opts in (
        ("int8_tensorwise", {"convrot": True}),
        ("convrot_w4a4", {}),
        ("asym_w4a8_int8", {"symmetric": False}),
        ("w6a8_int8", {}),
    )
    for g in (16, 64, 256)
]
PLAIN = [
    ("int8_tensorwise", {}),
    ("int8_tensorwise", {"per_row": True}),
    ("float8_e4m3fn", {}),
    ("nvfp4", {}),
    ("mxfp8", {}),
]
ISSUE = [
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 256}),
    ("convrot_w4a4", {"convrot_groupsize": 256}),
    ("asym_w4a8_int8", {"symmetric": False}),
    ("int8_tensorwise", {}),
    ("nvfp4", {}),
]
ROUTES = ("bfly", "gemm")  # quantcheck's butterflies; rotation_gemm.py's exact BLAS route


def _on(route: str, fn):
    import rotation_gemm

    def run():
        if route == "bfly":
            return fn()
        with rotation_gemm.patched():
            return fn()

    return run


CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
_clock = time.perf_counter


def _best(fns: list, repeat: int) -> list[float]:
    """Best-of-``repeat`` seconds of each callable, interleaved (after one warm-up call each
    when ``repeat`` > 1), by the ``--clock``: wall time, or the CPU time of the whole process
    (every thread; on a loaded machine the steadier figure, equal to wall time x threads
    when the threads are busy all along)."""
    for fn in fns if repeat > 1 else ():
        fn()
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            time.sleep(0.25)  # let the other side's spinning OpenMP/OpenBLAS threads go idle
            t = _clock()
            fn()
            best[i] = min(best[i], _clock() - t)
    return best


def run_rotate(n: int, k: int, repeat: int) -> list[dict]:
    """``rotate`` (BF16 in, BF16-rounded out) by both routes vs torch ``x @ H^T``; the two
    routes' results are compared bit for bit first."""
    import numpy as np
    import rotation_gemm
    import torch

    from quantcheck.numeric import hadamard

    w = _weights(n, k)
    tw = torch.from_numpy(w.view("uint16")).view(torch.bfloat16)
    mb = n * k * 2 / 1e6
    rows = []
    for g in (16, 64, 256):
        h = torch.from_numpy(hadamard.hadamard(g)).to(torch.bfloat16)

        def bfly(g=g):
            return hadamard.rotate(w, g, "bf16")

        def gemm(g=g):
            return rotation_gemm.rotate(w, g, "bf16")

        def theirs(g=g, h=h):
            return (tw.reshape(-1, g) @ h.T).reshape(n, k)

        assert np.array_equal(bfly().view(np.uint32), gemm().view(np.uint32))
        t = _best([bfly, gemm, theirs], repeat)
        row = {"case": f"rotate g={g}", "ck": mb / t[2]}
        row.update({r: mb / s for r, s in zip(ROUTES, t[:2], strict=True)})
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    return rows


def run_codecs(n: int, k: int, repeat: int, cases: list) -> list[dict]:
    """Quantize and dequantize of each case: our two routes and comfy-kitchen, interleaved."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "numeric"))
    import ckref

    from quantcheck.numeric import dequantize, quantize

    w = _weights(n, k)
    mb = n * k * 2 / 1e6
    rows = []
    for fmt, opts in cases:
        layer = quantize(w, fmt, **opts)
        tensors, marker = layer.arrays(), layer.marker
        ck_q, ck_dq = _ck_calls(ckref, fmt, opts, w, tensors, marker, n, k)
        rep = max(1, repeat // 3) if fmt in ("asym_w4a8_int8", "w6a8_int8") else repeat
        row: dict = {"case": _label(fmt, opts)}

        def ours_q(fmt=fmt, opts=opts):
            return quantize(w, fmt, **opts)

        def ours_dq(fmt=fmt, tensors=tensors, marker=marker):
            return dequantize(fmt, tensors, marker, (n, k))

        q = _best([_on(r, ours_q) for r in ROUTES] + [ck_q], rep)
        dq = _best([_on(r, ours_dq) for r in ROUTES] + [ck_dq], repeat)
        for op, t in (("q", q), ("dq", dq)):
            row.update({f"{op}_{r}": mb / s for r, s in zip(ROUTES, t[:2], strict=True)})
            row[f"{op}_ck"] = mb / t[2]
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    return rows


def run_reference(path: str, n: int, k: int, repeat: int) -> None:
    """rotate() of the module at ``path`` vs ours, BF16 in and out, interleaved best-of."""
    import importlib.util

    from quantcheck.numeric import hadamard

    spec = importlib.util.spec_from_file_location("quantcheck.numeric._hadamard_ref", path)
    assert spec is not None and spec.loader is not None
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    w = _weights(n, k)
    mb = n * k * 2 / 1e6
    for g in (16, 64, 256):
        t_ref, t_ours = _best_pair(
            lambda g=g: ref.rotate(w, g, "bf16"), lambda g=g: hadamard.rotate(w, g, "bf16"), repeat
        )
        print(
            f"rotate g={g}: reference {mb / t_ref:.0f} MB/s, ours {mb / t_ours:.0f} MB/s, "
            f"{t_ref / t_ours:.2f}x"
        )


def _markdown(rows: list[dict], n: int, k: int, threads: int, repeat: int, clock: str) -> None:
    load = os.getloadavg()[0]
    print(f"\n{cpu_name()}, {n}x{k} BF16, {threads} thread(s), best of {repeat}, load {load:.1f}")
    per = "second" if clock == "wall" else "CPU second (all threads)"
    print(f"MB of BF16 input per {per}; bfly = the butterflies (quantcheck), gemm =")
    print("rotation_gemm.py (BLAS for the groups whose sums are exact; same bits)\n")
    print("| case | q bfly | q gemm | q ck | q bfly/ck | dq bfly | dq gemm | dq ck | dq bfly/ck |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "q_ck" not in r:
            print(
                f"| {r['case']} (vs torch bf16 matmul) | {r['bfly']:.0f} | {r['gemm']:.0f} "
                f"| {r['ck']:.0f} | {r['bfly'] / r['ck']:.2f}x | | | | |"
            )
            continue
        cells = []
        for op in ("q", "dq"):
            b, a, c = r[f"{op}_bfly"], r[f"{op}_gemm"], r[f"{op}_ck"]
            cells += [f"{b:.0f}", f"{a:.0f}", f"{c:.0f}", f"{b / c:.2f}x"]
        print(f"| {r['case']} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="3072x3072")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rotate-only", action="store_true")
    ap.add_argument("--cases", choices=("all", "issue"), default="all")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--reference", help="another hadamard.py to time rotate() against")
    ap.add_argument("--clock", choices=tuple(CLOCK), default="wall")
    a = ap.parse_args()
    global _clock
    _clock = CLOCK[a.clock]
    os.environ["QUANTCHECK_THREADS"] = str(a.threads)
    import torch

    torch.set_num_threads(a.threads)
    n, k = (int(v) for v in a.shape.split("x"))
    if a.reference:
        run_reference(a.reference, n, k, a.repeat)
        return
    rows = run_rotate(n, k, a.repeat)
    if not a.rotate_only:
        rows += run_codecs(n, k, a.repeat, ISSUE if a.cases == "issue" else ROTATED + PLAIN)
    if a.markdown:
        _markdown(rows, n, k, a.threads, a.repeat, a.clock)


if __name__ == "__main__":
    main()
