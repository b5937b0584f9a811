"""`compare` benchmark (not a test): a BF16 diffusion-transformer-shaped original against its
NVFP4 copy.

Builds (once, in ``--dir`` or a temp folder) an original of ``--blocks`` transformer blocks, each
four 3072x3072 attention projections plus a 12288x3072 and a 3072x12288 MLP layer (226 MB of
BF16 per block; 8 blocks = 1.8 GB), and its NVFP4 copy made with ``quantcheck.numeric.quantize``.
Then, with the files in the page cache, it times

(a) the floor: the library's own in-process dequantize of every layer
    (``checkpoint.layer(p).dequantize()``) plus reading every original weight, and
(b) ``compare_checkpoints`` (what ``quantcheck compare`` runs),

best of ``--repeat`` interleaved rounds each, and prints b/a (the machine's load changes
between rounds: interleaving keeps the two figures comparable). Only public APIs that exist
on main are used, so the same script times the baseline: ``PYTHONPATH=/work/main/src python
benchmarks/bench_compare.py --dir D`` (reusing the files built in D).

    .venv/bin/python benchmarks/bench_compare.py [--blocks 8] [--dir D] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# sibling script, not a package
from machine import cpu_name

SHAPES = [
    ("attn.q", 3072, 3072),
    ("attn.k", 3072, 3072),
    ("attn.v", 3072, 3072),
    ("attn.o", 3072, 3072),
    ("mlp.up", 12288, 3072),
    ("mlp.down", 3072, 12288),
]


def _layers(blocks: int) -> list[tuple[str, int, int]]:
    return [(f"blocks.{b}.{name}", n, k) for b in range(blocks) for name, n, k in SHAPES]


def _write_original(path: Path, layers: list[tuple[str, int, int]], weight) -> None:
    """A safetensors file streamed layer by layer (the whole file never sits in memory)."""
    header, offset = {}, 0
    for prefix, n, k in layers:
        header[f"{prefix}.weight"] = {
            "dtype": "BF16",
            "shape": [n, k],
            "data_offsets": [offset, offset + n * k * 2],
        }
        offset += n * k * 2
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for prefix, n, k in layers:
            f.write(weight(prefix, n, k).tobytes())
    os.replace(tmp, path)


def build(folder: Path, blocks: int) -> tuple[Path, Path]:
    """The original and its NVFP4 copy in ``folder`` (reused when already there)."""
    import ml_dtypes
    import numpy as np

    from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
    from quantcheck.numeric import quantize
    from quantcheck.numeric.arrays import to_bytes

    orig, quant = folder / f"orig_{blocks}.safetensors", folder / f"nvfp4_{blocks}.safetensors"
    if orig.exists() and quant.exists():
        return quant, orig
    layers = _layers(blocks)
    qtensors: list = []

    def weight(prefix: str, n: int, k: int):
        rng = np.random.default_rng(zlib.crc32(prefix.encode()))
        w = (rng.standard_normal((n, k), dtype=np.float32) * 0.02).astype(ml_dtypes.bfloat16)
        q = quantize(w, "nvfp4")
        qtensors.extend(
            RawTensor(f"{prefix}.{s}", dt, a.shape, to_bytes(a)) for s, (dt, a) in q.tensors.items()
        )
        qtensors.append(marker_tensor(prefix, q.marker))
        return w

    t = time.perf_counter()
    _write_original(orig, layers, weight)
    write_safetensors(quant, qtensors)
    print(
        f"built {orig.name} ({orig.stat().st_size / 1e9:.2f} GB) and {quant.name} "
        f"({quant.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t:.0f} s"
    )
    return quant, orig


def floor(quant: Path, orig: Path) -> float:
    """(a) dequantize every layer + read every original weight, in process."""
    from quantcheck.model.checkpoint import load_checkpoint

    t = time.perf_counter()
    with load_checkpoint([str(quant)]) as q, load_checkpoint([str(orig)]) as o:
        for prefix in q.layers:
            q.layer(prefix).dequantize()
            o.layer(prefix).read("weight")
    return time.perf_counter() - t


def compare(quant: Path, orig: Path) -> float:
    """(b) compare_checkpoints, in process."""
    from quantcheck.numeric.compare import compare_checkpoints

    t = time.perf_counter()
    compare_checkpoints([str(quant)], [str(orig)], progress=False)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=8, help="transformer blocks (226 MB each)")
    ap.add_argument("--dir", help="folder for the checkpoints (default: a new temp folder)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    folder = Path(args.dir or tempfile.mkdtemp(prefix="bench_compare_"))
    folder.mkdir(parents=True, exist_ok=True)
    quant, orig = build(folder, args.blocks)
    floor(quant, orig)  # warm the page cache
    runs = [(floor(quant, orig), compare(quant, orig)) for _ in range(args.repeat)]  # interleaved
    a = min(r[0] for r in runs)
    b = min(r[1] for r in runs)
    pairs = sorted(r[1] / r[0] for r in runs)
    import quantcheck

    print(f"quantcheck from {Path(quantcheck.__file__).parent}")
    print(
        f"CPU: {cpu_name()}, {os.cpu_count()} CPUs, QUANTCHECK_THREADS="
        f"{os.environ.get('QUANTCHECK_THREADS', '(default)')}"
    )
    print(f"(a) dequantize every layer + read the original: {a:7.2f} s")
    print(f"(b) compare:                                    {b:7.2f} s")
    print(
        f"ratio b/a: {b / a:.2f}x (best of {args.repeat} each; per-round ratios "
        f"{', '.join(f'{p:.2f}' for p in pairs)})"
    )


if __name__ == "__main__":
    main()
