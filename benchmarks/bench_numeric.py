"""Numeric codec benchmark (not a test): quantcheck.numeric vs comfy-kitchen's CPU backend.

Throughput is MB/s of BF16 input (N*K*2 bytes) for quantize and for dequantize (F32 output,
both sides), best of ``--repeat`` runs, in one process with torch.set_num_threads(--threads)
and our thread pool (QUANTCHECK_THREADS) set to the same count (our codecs call no BLAS).
Peak memory is measured per operation in a fresh child process: after warm-up and building the
inputs, the kernel's peak-RSS counter is reset (/proc/self/clear_refs = 5), and peak memory =
VmHWM - VmRSS before the call (falls back to tracemalloc's peak when clear_refs is not
writable). The result includes the output arrays.

    .venv/bin/python benchmarks/bench_numeric.py [--shape 3072x3072] [--threads 2] [--markdown]
        [--agreement]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CASES = [
    ("float8_e4m3fn", {}),
    ("float8_e5m2", {}),
    ("int8_tensorwise", {}),
    ("int8_tensorwise", {"per_row": True}),
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 256}),
    ("nvfp4", {}),
    ("mxfp8", {}),
    ("convrot_w4a4", {"convrot_groupsize": 256}),
    ("asym_w4a8_int8", {}),
    ("asym_w4a8_int8", {"bits": 6}),
    ("asym_w4a8_int8", {"symmetric": False}),
    ("awq_w4a16", {}),
]
TARGET_1X = {"float8_e4m3fn", "float8_e5m2", "int8_tensorwise", "nvfp4", "mxfp8"}
ROTATED = {"convrot_w4a4", "asym_w4a8_int8"}  # plus int8 ConvRot (issue 10: q ≥ 1.5x)


def _label(fmt: str, opts: dict) -> str:
    return fmt + ("" if not opts else " " + ",".join(f"{k}={v}" for k, v in opts.items()))


def _weights(n: int, k: int):
    import ml_dtypes
    import numpy as np

    return (np.random.default_rng(0).standard_normal((n, k)) * 0.02).astype(ml_dtypes.bfloat16)


def _awq_tensors(n: int, k: int):
    import ml_dtypes
    import numpy as np

    rng = np.random.default_rng(0)
    return {
        "weight": rng.integers(-128, 128, (n, k // 2), dtype=np.int8),
        "weight_scale": (rng.random((k // 64, n)) * 0.01).astype(ml_dtypes.bfloat16),
        "weight_zeros": (rng.standard_normal((k // 64, n)) * 0.01).astype(ml_dtypes.bfloat16),
    }


def _best_pair(ours, theirs, repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` seconds of two callables, runs interleaved (load noise hits both)."""
    ours()
    theirs()
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for i, fn in enumerate((ours, theirs)):
            time.sleep(0.25)  # let the other side's spinning OpenMP/OpenBLAS threads go idle
            t = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return best[0], best[1]


def _ck_calls(ckref, fmt: str, opts: dict, w, tensors: dict, marker: dict, n: int, k: int):
    """(quantize, dequantize) closures on torch tensors prepared outside the timed region."""
    import comfy_kitchen as ck
    import torch
    from comfy_kitchen.tensor import QuantizedTensor

    tw = ckref.n2t(w)
    t = {key: ckref.n2t(v) for key, v in tensors.items()}
    layout = ckref.LAYOUTS.get(fmt)
    kw = ckref.ck_kwargs(fmt, opts)

    def quant():
        with ck.use_backend("eager"):
            return QuantizedTensor.from_float(tw, layout, **kw).state_dict("weight")

    f32 = torch.float32
    if fmt in ("float8_e4m3fn", "float8_e5m2"):

        def deq():
            return ck.dequantize_per_tensor_fp8(t["weight"], t["weight_scale"], f32)
    elif fmt == "int8_tensorwise" and marker.get("convrot"):

        def deq():
            return torch.ops.comfy_kitchen.dequantize_int8_convrot_weight(
                t["weight"], t["weight_scale"], marker["convrot_groupsize"]
            )
    elif fmt == "int8_tensorwise":

        def deq():
            return ck.dequantize_int8_simple(t["weight"], t["weight_scale"])
    elif fmt == "nvfp4":

        def deq():
            return ck.dequantize_nvfp4(t["weight"], t["weight_scale_2"], t["weight_scale"], f32)
    elif fmt == "mxfp8":
        bs = t["weight_scale"].view(torch.float8_e8m0fnu)

        def deq():
            return ck.dequantize_mxfp8(t["weight"], bs, f32)
    elif fmt in ("asym_w4a8_int8", "w6a8_int8"):

        def deq():
            return ck.dequantize_w4a8_int8_weight(
                t["weight"],
                t["weight_s_rel"],
                t["weight_s_channel"],
                t.get("weight_codebook"),
                t.get("weight_correction"),
                marker["group_size"],
                marker["convrot_groupsize"],
                f32,
            )
    elif fmt == "convrot_w4a4":

        def deq():
            return ck.dequantize_convrot_w4a4_weight(
                t["weight"], t["weight_scale"], marker["convrot_groupsize"], 64, f32
            )
    else:  # awq_w4a16
        from comfy_kitchen.tensor.awq_w4a16 import TensorCoreAWQW4A16Layout as Awq

        params = Awq.Params(
            scale=t["weight_scale"],
            orig_dtype=f32,
            orig_shape=(n, k),
            zeros=t["weight_zeros"],
            group_size=64,
        )

        def deq():
            return Awq.dequantize(t["weight"], params)

    return quant, deq


def run_speed(n: int, k: int, repeat: int, cases: list = CASES) -> list[dict]:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "numeric"))
    import ckref

    from quantcheck.numeric import dequantize, quantize

    w = _weights(n, k)
    mb = n * k * 2 / 1e6
    rows = []
    for fmt, opts in cases:
        row = {"case": _label(fmt, opts)}
        if fmt == "awq_w4a16":
            tensors = _awq_tensors(n, k)
            marker = {"format": fmt, "group_size": 64}
        else:
            layer = quantize(w, fmt, **opts)
            tensors, marker = layer.arrays(), layer.marker
        ck_q, ck_dq = _ck_calls(ckref, fmt, opts, w, tensors, marker, n, k)
        if fmt != "awq_w4a16":
            rep = max(1, repeat // 3) if fmt == "asym_w4a8_int8" else repeat
            t_ours, t_ck = _best_pair(lambda f=fmt, o=opts: quantize(w, f, **o), ck_q, rep)
            row["q_ours"], row["q_ck"] = mb / t_ours, mb / t_ck
        t_ours, t_ck = _best_pair(
            lambda f=fmt, t=tensors, m=marker: dequantize(f, t, m, (n, k)), ck_dq, repeat
        )
        row["dq_ours"], row["dq_ck"] = mb / t_ours, mb / t_ck
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
    return rows


def run_agreement(n: int, k: int) -> dict[str, str]:
    """Per case: how our quantize and dequantize agree with comfy-kitchen on this machine (the
    rotated formats through tests/numeric/contract.py, which asserts the any-order bound)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "numeric"))
    import ckref
    import contract
    import numpy as np
    from test_parity import check_quantize

    from quantcheck.numeric import dequantize, quantize

    w = _weights(n, k)
    out = {}
    for fmt, opts in CASES:
        if fmt == "awq_w4a16":
            t = _awq_tensors(n, k)
            m = {"format": fmt, "group_size": 64}
            same = np.array_equal(
                dequantize(fmt, t, m, (n, k)), ckref.ck_dequantize(fmt, t, m, (n, k))
            )
            out[_label(fmt, opts)] = "dequantize bit-exact" if same else "DIFFERS"
            continue
        layer = quantize(w, fmt, **opts)
        theirs = ckref.ck_quantize(w, fmt, **opts)
        ours_deq = dequantize(fmt, theirs, layer.marker, (n, k))
        ref_deq = ckref.ck_dequantize(fmt, theirs, layer.marker, (n, k))
        rotated = fmt in ("convrot_w4a4", "asym_w4a8_int8") or opts.get("convrot")
        if not rotated:
            diff = sum(
                int(
                    np.count_nonzero(
                        a.reshape(-1).view(np.uint8) != theirs[key].reshape(-1).view(np.uint8)
                    )
                )
                for key, (_, a) in layer.tensors.items()
            )
            dd = int(np.count_nonzero(ours_deq.view(np.uint32) != ref_deq.view(np.uint32)))
            out[_label(fmt, opts)] = (
                "bit-exact" if diff == dd == 0 else f"{diff} bytes / {dd} values DIFFER"
            )
            continue
        st = check_quantize(fmt, opts, w, layer.arrays(), theirs)
        dd = contract.check_rotated_dequantize(
            fmt, theirs, layer.marker, (n, k), "float32", ours_deq, ref_deq
        )
        mine = layer.arrays()
        scales = [
            f"{key} {np.count_nonzero(mine[key] != theirs[key])} of {theirs[key].size}"
            for key in theirs
            if key != "weight" and not np.array_equal(mine[key], theirs[key])
        ]
        out[_label(fmt, opts)] = (
            f"{st['codes']} of {st['of']} codes differ ({st['near_boundary']} within the bound "
            f"of a rounding boundary){'; differs: ' + ', '.join(scales) if scales else ''}; "
            f"dequantize {dd} of {n * k} F32 values differ; all within bound"
        )
        print(out[_label(fmt, opts)], file=sys.stderr)
    return out


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def child_memory(fmt: str, opts: dict, op: str, n: int, k: int) -> None:
    """Runs in a fresh process; prints the peak bytes above the pre-call RSS."""
    import tracemalloc

    from quantcheck.numeric import dequantize, quantize

    w = _weights(n, k)
    if fmt == "awq_w4a16":
        tensors, marker = _awq_tensors(n, k), {"format": fmt, "group_size": 64}
    else:
        layer = quantize(w, fmt, **opts)
        tensors, marker = layer.arrays(), layer.marker
        del layer
    small = _weights(64, 256)
    if fmt != "awq_w4a16":
        quantize(small, fmt, **opts)  # warm-up: imports, caches
    call = (
        (lambda: quantize(w, fmt, **opts))
        if op == "q"
        else (lambda: dequantize(fmt, tensors, marker, (n, k)))
    )
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        base = _status("VmRSS")
        out = call()
        peak, how = _status("VmHWM") - base, "rss"
    except OSError:
        tracemalloc.start()
        out = call()
        peak, how = tracemalloc.get_traced_memory()[1], "tracemalloc"
    del out
    print(json.dumps({"peak": peak, "how": how}))


def run_memory(n: int, k: int, threads: int) -> dict[str, dict]:
    res = {}
    env = dict(os.environ, QUANTCHECK_THREADS=str(threads))
    for fmt, opts in CASES:
        for op in ("q", "dq"):
            if fmt == "awq_w4a16" and op == "q":
                continue
            out = subprocess.run(
                [sys.executable, __file__, "--child", json.dumps([fmt, opts, op, n, k])],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            res.setdefault(_label(fmt, opts), {})[op] = json.loads(out.stdout.splitlines()[-1])
    return res


def markdown(
    rows: list[dict], mem: dict, n: int, k: int, threads: int, agree: dict[str, str] | None = None
) -> str:
    f32 = n * k * 4
    lines = [
        "## Numerics (issues 4 and 10)",
        "",
        f"`benchmarks/bench_numeric.py --shape {n}x{k} --threads {threads}`: BF16 weight "
        f"0.02·randn, {os.cpu_count()} cores. Throughput in MB/s of BF16 input; ratio = "
        "ours / comfy-kitchen 0.2.40 CPU eager (torch.set_num_threads"
        f"({threads}); our row-chunk thread pool also uses {threads} threads). "
        "Dequantize writes F32 on both sides. Peak memory: extra RSS of one call in a fresh "
        "process (inputs already built), in multiples of the layer's F32 size "
        f"({f32 / 1e6:.1f} MB).",
        "",
        "| format | quantize ours MB/s | ck MB/s | ratio | dequantize ours MB/s | ck MB/s | ratio "
        "| peak mem q / dq (×F32) | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m = mem.get(r["case"], {})
        fmt = r["case"].split()[0]
        if fmt in ROTATED or "convrot=True" in r["case"]:
            target = "q ≥1.5x, dq ≥1x"
        else:
            target = "≥1x" if fmt in TARGET_1X else "q ≥0.5x, dq ≥1x"
        q = (
            f"{r['q_ours']:.0f} | {r['q_ck']:.0f} | {r['q_ours'] / r['q_ck']:.2f}"
            if "q_ours" in r
            else "— | — | —"
        )
        pq = f"{m['q']['peak'] / f32:.2f}" if "q" in m else "—"
        pd = f"{m['dq']['peak'] / f32:.2f}" if "dq" in m else "—"
        lines.append(
            f"| {r['case']} | {q} | {r['dq_ours']:.0f} | {r['dq_ck']:.0f} | "
            f"{r['dq_ours'] / r['dq_ck']:.2f} | {pq} / {pd} | {target} |"
        )
    if agree:
        lines += [
            "",
            "| format | agreement with comfy-kitchen (this input, this machine) |",
            "|---|---|",
        ]
        lines += [f"| {case} | {text} |" for case, text in agree.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="3072x3072")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="print the BENCHMARKS.md section")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument(
        "--agreement",
        action="store_true",
        help="also report per-format agreement with comfy-kitchen",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        fmt, opts, op, n, k = json.loads(a.child)
        child_memory(fmt, opts, op, n, k)
        return
    os.environ["QUANTCHECK_THREADS"] = str(a.threads)
    import torch

    torch.set_num_threads(a.threads)
    n, k = (int(v) for v in a.shape.lower().split("x"))
    rows = run_speed(n, k, a.repeat)
    mem = {} if a.no_memory else run_memory(n, k, a.threads)
    agree = run_agreement(n, k) if a.agreement else None
    print(markdown(rows, mem, n, k, a.threads, agree))


if __name__ == "__main__":
    main()
