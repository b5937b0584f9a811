"""Rotation benchmark (not a test): the rotated formats of issue 28 vs comfy-kitchen's CPU eager
backend, plus the rotation alone against torch's BF16 matmul ``x @ H^T`` (what comfy-kitchen
does).

MB/s of BF16 input (N*K*2 bytes), best of ``--repeat`` interleaved runs, in one process with
torch.set_num_threads(--threads) and QUANTCHECK_THREADS set to the same count.

    .venv/bin/python benchmarks/bench_rotation.py [--shape 3072x3072] [--threads 2] [--repeat 3]
        [--rotate-only] [--markdown] [--reference FILE]

``--reference FILE`` times another version of numeric/hadamard.py (e.g. ``git show
main:src/quantcheck/numeric/hadamard.py > /tmp/ref.py``) against ours, rotate() alone on one
thread, runs interleaved in one process (load noise hits both), best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from bench_numeric import _best_pair, _weights, run_speed

CASES = [
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 16}),
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 64}),
    ("int8_tensorwise", {"convrot": True, "convrot_groupsize": 256}),
    ("convrot_w4a4", {"convrot_groupsize": 256}),
    ("asym_w4a8_int8", {"symmetric": False}),
    ("int8_tensorwise", {}),
    ("nvfp4", {}),
]


def run_rotate(n: int, k: int, repeat: int) -> list[dict]:
    """``hadamard.rotate`` (BF16 in, BF16-rounded out) vs torch ``x @ H^T`` in BF16."""
    import torch

    from quantcheck.numeric import hadamard

    w = _weights(n, k)
    tw = torch.from_numpy(w.view("uint16")).view(torch.bfloat16)
    mb = n * k * 2 / 1e6
    rows = []
    for g in (16, 64, 256):
        h = torch.from_numpy(hadamard.hadamard(g)).to(torch.bfloat16)

        def theirs(g=g, h=h):
            return (tw.reshape(-1, g) @ h.T).reshape(n, k)

        t_ours, t_ck = _best_pair(lambda g=g: hadamard.rotate(w, g, "bf16"), theirs, repeat)
        rows.append({"case": f"rotate g={g}", "ours": mb / t_ours, "torch": mb / t_ck})
        print(json.dumps(rows[-1]), file=sys.stderr)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="3072x3072")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rotate-only", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--reference", help="another hadamard.py to time rotate() against")
    a = ap.parse_args()
    os.environ["QUANTCHECK_THREADS"] = str(a.threads)
    import torch

    torch.set_num_threads(a.threads)
    n, k = (int(v) for v in a.shape.split("x"))
    if a.reference:
        run_reference(a.reference, n, k, a.repeat)
        return
    rows = run_rotate(n, k, a.repeat)
    if not a.rotate_only:
        rows += run_speed(n, k, a.repeat, CASES)
    if not a.markdown:
        return
    print(f"\n{n}x{k} BF16, {a.threads} thread(s), best of {a.repeat}; MB/s of BF16 input\n")
    print("| case | q ours | q ck | q ratio | dq ours | dq ck | dq ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "ours" in r:
            ratio = r["ours"] / r["torch"]
            print(
                f"| {r['case']} (torch bf16 matmul) | {r['ours']:.0f} | {r['torch']:.0f} "
                f"| {ratio:.2f}x | | | |"
            )
            continue
        print(
            f"| {r['case']} | {r['q_ours']:.0f} | {r['q_ck']:.0f} | {r['q_ours'] / r['q_ck']:.2f}x "
            f"| {r['dq_ours']:.0f} | {r['dq_ck']:.0f} | {r['dq_ours'] / r['dq_ck']:.2f}x |"
        )


if __name__ == "__main__":
    main()
