"""`quantcheck lora` benchmark (not a test): a ~1 GB FP8 base and a rank-32 LoRA over every
linear layer.

Builds (once, in ``--dir`` or a temp folder) a base of ``--blocks`` transformer blocks, each
four 3072x3072 attention projections and a 12288x3072 / 3072x12288 MLP pair, stored
float8_e4m3fn with a scalar scale (113 MB per block; 9 blocks = 1.02 GB), and a kohya LoRA of
rank 32 (BF16 up/down) over every one of those layers. With the files in the page cache it
times, best of ``--repeat`` interleaved rounds:

(a) reading both headers (``load_checkpoint`` of the base with its markers, and of the LoRA);
(b) the header-only part of ``quantcheck lora`` (``lora_check(..., numbers=False)``: both
    headers, key map, load_lora, shapes, outcomes, findings) -- b/a;
(c) the codec floor on the first block's layers: quantcheck's dequantize of each layer plus
    ComfyUI's stochastic re-quantization twice (W + s·dW and W), what the figures need;
(d) the figures of those layers (``add_figures``: reads, dW from the factors, both
    re-quantizations, the metrics) -- d/c;
(b2) (b) for every target runtime (``--target all``: the other runtimes' LoRA paths too);
(e) (d) with every runtime's figures (SD.Next's SDNQ re-quantization, the bf16/f16 merges of
    InvokeAI and sd.cpp besides ComfyUI's) -- e/d.

    .venv/bin/python benchmarks/bench_lora.py [--blocks 9] [--dir D] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# sibling scripts, not a package: the compare benchmark's block of layers
from bench_compare import _layers
from machine import cpu_name

RANK = 32


def build(folder: Path, blocks: int) -> tuple[Path, Path, Path]:
    """(base, LoRA over every layer, LoRA over block 0); written once."""
    import ml_dtypes

    from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors

    base, lora, lora0 = (
        folder / n for n in ("base.safetensors", "lora.safetensors", "lora0.safetensors")
    )
    if base.exists() and lora.exists() and lora0.exists():
        return base, lora, lora0
    rng = np.random.default_rng(0)
    tensors = []
    for prefix, n, k in _layers(blocks):
        codes = rng.integers(0, 256, size=n * k, dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0  # no NaN codes
        tensors.append(RawTensor(f"{prefix}.weight", "F8_E4M3", (n, k), codes.tobytes()))
        scale = np.asarray(1e-4, np.float32)
        tensors.append(RawTensor(f"{prefix}.weight_scale", "F32", (), scale.tobytes()))
        tensors.append(marker_tensor(prefix, {"format": "float8_e4m3fn"}))
    write_safetensors(base, tensors)

    def lora_tensors(layers: list[tuple[str, int, int]]) -> list[RawTensor]:
        out = []
        for prefix, n, k in layers:
            x = "lora_unet_" + prefix.replace(".", "_")
            up = (rng.standard_normal((n, RANK)) * 1e-3).astype(ml_dtypes.bfloat16)
            down = (rng.standard_normal((RANK, k)) * 1e-2).astype(ml_dtypes.bfloat16)
            out.append(RawTensor(f"{x}.lora_up.weight", "BF16", up.shape, up.tobytes()))
            out.append(RawTensor(f"{x}.lora_down.weight", "BF16", down.shape, down.tobytes()))
            alpha = np.asarray(RANK, np.float32)
            out.append(RawTensor(f"{x}.alpha", "F32", (), alpha.tobytes()))
        return out

    write_safetensors(lora, lora_tensors(_layers(blocks)))
    write_safetensors(lora0, lora_tensors(_layers(1)))
    return base, lora, lora0


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=9)
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench_lora_"))
    folder.mkdir(parents=True, exist_ok=True)
    base, lora, lora0 = build(folder, args.blocks)

    from quantcheck.cli.lora import lora_check
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.numeric.lora_patch import requantize
    from quantcheck.numeric.stochastic import string_to_seed
    from quantcheck.rules.lora.analyse import header_analysis
    from quantcheck.rules.lora.figures import add_figures

    def headers() -> None:
        load_checkpoint([str(base)]).close()
        load_checkpoint([str(lora)], read_markers=False).close()

    def header_part() -> None:
        lora_check([str(base)], [str(lora)], numbers=False)

    def header_part_all() -> None:
        lora_check([str(base)], [str(lora)], numbers=False, target="all")

    first = [p for p, _, _ in _layers(1)]

    def floor() -> None:
        with load_checkpoint([str(base)]) as ck:
            for p in first:
                w = ck.layer(p).dequantize()
                seed = string_to_seed(f"diffusion_model.{p}.weight")
                requantize(w, "float8_e4m3fn", seed)
                requantize(w, "float8_e4m3fn", seed)

    def figures(runtimes: tuple[str, ...] = ()) -> None:
        with (
            load_checkpoint([str(base)]) as ck,
            load_checkpoint([str(lora0)], read_markers=False) as lo,
        ):
            a, _, patches = header_analysis(ck, [lo], runtimes=runtimes)
            add_figures(a, ck, patches, None)

    from quantcheck.runtimes import targets_of

    every = targets_of("all")
    rounds: dict[str, list[float]] = {
        k: [] for k in ("headers", "header_part", "header_all", "floor", "figures", "all")
    }
    for _ in range(args.repeat):  # interleaved: the machine's load changes between rounds
        rounds["headers"].append(_best(headers, 1))
        rounds["header_part"].append(_best(header_part, 1))
        rounds["header_all"].append(_best(header_part_all, 1))
        rounds["floor"].append(_best(floor, 1))
        rounds["figures"].append(_best(figures, 1))
        rounds["all"].append(_best(lambda: figures(every), 1))
    best = {k: min(v) for k, v in rounds.items()}
    size = base.stat().st_size
    params = sum(n * k for _, n, k in _layers(1))
    print(f"CPU: {cpu_name()}")
    print(
        f"base {size / 1e9:.2f} GB ({args.blocks} blocks, {len(_layers(args.blocks))} layers), "
        f"LoRA rank {RANK} over every layer ({lora.stat().st_size / 1e6:.0f} MB)"
    )
    a, b, c, d = (best[k] for k in ("headers", "header_part", "floor", "figures"))
    print(f"(a) both headers:           {a * 1e3:8.1f} ms")
    print(f"(b) lora, header-only part: {b * 1e3:8.1f} ms   b/a = {b / a:.2f}")
    print(f"(c) codec floor, block 0:   {c:8.2f} s    ({params / c / 1e6:.0f} M weights/s)")
    print(f"(d) figures, block 0:       {d:8.2f} s    d/c = {d / c:.2f}")
    b2, e = best["header_all"], best["all"]
    print(f"(b2) header-only, all:      {b2 * 1e3:8.1f} ms   b2/a = {b2 / a:.2f}")
    print(f"(e) figures, all runtimes:  {e:8.2f} s    e/d = {e / d:.2f}")


if __name__ == "__main__":
    main()
