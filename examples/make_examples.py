"""Generate the example checkpoints in examples/ (standard library only, deterministic).

    python examples/make_examples.py [OUT_DIR]

Each file is a tiny two-block "diffusion model" with real-looking quantized tensors: one valid
file per format family, a mixed NVFP4 + INT8 file, and `broken_seeds.safetensors` showing the two
sglang errors the project started from (an INT8 layer with an F16 scale; a W4A8 layer with a BF16
channel scale) plus a marker left on a BF16 layer.
"""

from __future__ import annotations

import random
import struct
import sys
from pathlib import Path

from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors

PREFIX = "model.diffusion_model.transformer_blocks"
LINEARS = ("attn.to_q", "attn.to_k", "attn.to_v", "attn.to_out.0", "ff.net.0.proj", "ff.net.2")
rng = random.Random(20261202)


def f32(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def bf16(values: list[float]) -> bytes:
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def f16(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}e", *values)


def scales(n: int, lo: float = 0.002, hi: float = 0.02) -> list[float]:
    return [rng.uniform(lo, hi) for _ in range(n)]


def codes(n: int, lo: int, hi: int) -> bytes:
    return bytes(rng.randint(lo, hi) & 0xFF for _ in range(n))


def fp8_codes(n: int) -> bytes:
    """Random finite E4M3 bytes (0x7F / 0xFF are NaN)."""
    return bytes(b if b & 0x7F != 0x7F else 0x3C for b in codes(n, 0, 255))


def swizzled_scales(rows: int, cols: int, lo: int, hi: int) -> tuple[tuple[int, int], bytes]:
    """A [rows, cols] block-scale matrix in the 128x4-tile layout, zero padding."""
    pr, pc = -(-rows // 128) * 128, -(-cols // 4) * 4
    buf = bytearray(pr * pc)
    ncb = pc // 4
    for r in range(rows):
        for c in range(cols):
            off = ((r // 128) * ncb + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4
            buf[off] = rng.randint(lo, hi)
    return (pr, pc), bytes(buf)


def extras(prefix: str, n: int) -> list[RawTensor]:
    return [RawTensor(f"{prefix}.bias", "BF16", (n,), bf16(scales(n, -0.1, 0.1)))]


def norms(block: str, h: int) -> list[RawTensor]:
    return [RawTensor(f"{block}.norm1.weight", "BF16", (h,), bf16([1.0] * h))]


def layer_fp8(p: str, n: int, k: int, fmt: str = "float8_e4m3fn") -> list[RawTensor]:
    dt = "F8_E4M3" if fmt == "float8_e4m3fn" else "F8_E5M2"
    return [
        RawTensor(f"{p}.weight", dt, (n, k), fp8_codes(n * k)),
        RawTensor(f"{p}.weight_scale", "F32", (), f32(scales(1))),
        marker_tensor(p, {"format": fmt}),
        *extras(p, n),
    ]


def layer_int8(
    p: str, n: int, k: int, convrot: bool = True, scale_dtype: str = "F32"
) -> list[RawTensor]:
    s = scales(n)
    data = f32(s) if scale_dtype == "F32" else f16(s)
    m: dict[str, object] = {"format": "int8_tensorwise"}
    if convrot:
        m.update(convrot=True, convrot_groupsize=16)
    return [
        RawTensor(f"{p}.weight", "I8", (n, k), codes(n * k, -127, 127)),
        RawTensor(f"{p}.weight_scale", scale_dtype, (n, 1), data),
        marker_tensor(p, m),
        *extras(p, n),
    ]


def layer_nvfp4(p: str, n: int, k: int) -> list[RawTensor]:
    shape, sc = swizzled_scales(n, k // 16, 0x30, 0x48)
    return [
        RawTensor(f"{p}.weight", "U8", (n, k // 2), codes(n * k // 2, 0, 255)),
        RawTensor(f"{p}.weight_scale", "F8_E4M3", shape, sc),
        RawTensor(f"{p}.weight_scale_2", "F32", (), f32(scales(1, 1e-4, 1e-3))),
        marker_tensor(p, {"format": "nvfp4"}),
        *extras(p, n),
    ]


def layer_mxfp8(p: str, n: int, k: int) -> list[RawTensor]:
    shape, sc = swizzled_scales(n, k // 32, 115, 122)
    return [
        RawTensor(f"{p}.weight", "F8_E4M3", (n, k), fp8_codes(n * k)),
        RawTensor(f"{p}.weight_scale", "U8", shape, sc),
        marker_tensor(p, {"format": "mxfp8"}),
        *extras(p, n),
    ]


LUT = [
    -0.980602,
    -0.794529,
    -0.638165,
    -0.500986,
    -0.377321,
    -0.263187,
    -0.155210,
    -0.050720,
    0.052541,
    0.156985,
    0.265284,
    0.379533,
    0.502636,
    0.638953,
    0.794876,
    0.980671,
]


def layer_w4a8(p: str, n: int, k: int, g: int = 16, channel_dtype: str = "F32") -> list[RawTensor]:
    ch = scales(n, 1e-4, 1e-3)
    chb = f32(ch) if channel_dtype == "F32" else bf16(ch)
    return [
        RawTensor(f"{p}.weight", "I8", (n, k // 2), codes(n * k // 2, 0, 255)),
        RawTensor(f"{p}.weight_s_rel", "F8_E4M3", (n, k // g), codes(n * k // g, 0x68, 0x78)),
        RawTensor(f"{p}.weight_s_channel", channel_dtype, (n,), chb),
        RawTensor(f"{p}.weight_codebook", "F32", (16,), f32(LUT)),
        marker_tensor(
            p,
            {"format": "asym_w4a8_int8", "group_size": g, "convrot_groupsize": 16, "convrot": True},
        ),
        *extras(p, n),
    ]


def layer_w6a8(p: str, n: int, k: int, g: int = 32) -> list[RawTensor]:
    """Uniform 6-bit codes, 3K/4 bytes a row (asym_w4a8_int8's 6-bit layout, own name)."""
    return [
        RawTensor(f"{p}.weight", "I8", (n, 3 * k // 4), codes(n * 3 * k // 4, 0, 255)),
        RawTensor(f"{p}.weight_s_rel", "F8_E4M3", (n, k // g), codes(n * k // g, 0x68, 0x78)),
        RawTensor(f"{p}.weight_s_channel", "F32", (n,), f32(scales(n, 1e-4, 1e-3))),
        marker_tensor(
            p, {"format": "w6a8_int8", "group_size": g, "convrot_groupsize": 16, "convrot": True}
        ),
        *extras(p, n),
    ]


def layer_w4a4(p: str, n: int, k: int) -> list[RawTensor]:
    def nib() -> int:
        return rng.randint(-7, 7) & 0xF

    packed = bytes(nib() | nib() << 4 for _ in range(n * k // 2))
    return [
        RawTensor(f"{p}.weight", "I8", (n, k // 2), packed),
        RawTensor(f"{p}.weight_scale", "F32", (n,), f32(scales(n))),
        marker_tensor(p, {"format": "convrot_w4a4", "convrot_groupsize": 16}),
        *extras(p, n),
    ]


def layer_awq(p: str, n: int, k: int, g: int = 64) -> list[RawTensor]:
    return [
        RawTensor(f"{p}.weight", "I8", (n, k // 2), codes(n * k // 2, 0, 255)),
        RawTensor(f"{p}.weight_scale", "BF16", (k // g, n), bf16(scales(k // g * n))),
        RawTensor(f"{p}.weight_zeros", "BF16", (k // g, n), bf16(scales(k // g * n, -0.01, 0.01))),
        marker_tensor(p, {"format": "awq_w4a16", "group_size": g}),
        *extras(p, n),
    ]


def model(make, n: int = 128, k: int = 128, blocks: int = 2) -> list[RawTensor]:
    out: list[RawTensor] = []
    for b in range(blocks):
        block = f"{PREFIX}.{b}"
        out += norms(block, k)
        for name in LINEARS:
            out += make(f"{block}.{name}", n, k)
    return out


def broken() -> list[RawTensor]:
    b0, b1 = f"{PREFIX}.0", f"{PREFIX}.1"
    out = norms(b0, 128) + norms(b1, 128)
    out += layer_w4a8(f"{b0}.attn.to_q", 128, 128)
    out += layer_w4a8(f"{b0}.attn.to_k", 128, 128, channel_dtype="BF16")  # seed 2
    out += layer_int8(f"{b0}.attn.to_v", 128, 128, convrot=False)  # embedding-style companion
    out += layer_int8(f"{b1}.attn.to_q", 128, 128, convrot=False, scale_dtype="F16")  # seed 1
    p = f"{b1}.attn.to_k"  # marker left on a layer that fell back to BF16
    out += [
        RawTensor(f"{p}.weight", "BF16", (128, 128), bf16(scales(128 * 128, -0.05, 0.05))),
        RawTensor(f"{p}.weight_scale", "F16", (), f16([0.01])),
        marker_tensor(p, {"format": "int8_tensorwise"}),
        *extras(p, 128),
    ]
    return out


#: A reduced Flux.1 [dev]-shaped model that ComfyUI's own detection (comfy/model_detection.py
#: @783545f6: `double_blocks.0.img_attn.norm.key_norm.scale` + `img_in.weight`) takes for Flux:
#: hidden 128 (one head of axes 16+56+56), one double and one single block, in_channels 16
#: (img_in [128, 64]), context 64, vector 32, guidance embedding; keys as Black Forest Labs'
#: files store them, no `model.diffusion_model.` prefix. The block linears are quantized; the
#: embedders, modulations and final layer stay BF16 (what Flux producers keep high precision).
FLUX_H = 128
FLUX_PLAIN = {
    "img_in": (FLUX_H, 64),
    "time_in.in_layer": (FLUX_H, 256),
    "time_in.out_layer": (FLUX_H, FLUX_H),
    "vector_in.in_layer": (FLUX_H, 32),
    "vector_in.out_layer": (FLUX_H, FLUX_H),
    "guidance_in.in_layer": (FLUX_H, 256),
    "guidance_in.out_layer": (FLUX_H, FLUX_H),
    "txt_in": (FLUX_H, 64),
    "double_blocks.0.img_mod.lin": (6 * FLUX_H, FLUX_H),
    "double_blocks.0.txt_mod.lin": (6 * FLUX_H, FLUX_H),
    "single_blocks.0.modulation.lin": (3 * FLUX_H, FLUX_H),
    "final_layer.linear": (64, FLUX_H),
    "final_layer.adaLN_modulation.1": (2 * FLUX_H, FLUX_H),
}
FLUX_QUANTIZED = {
    f"double_blocks.0.{s}_{name}": shape
    for s in ("img", "txt")
    for name, shape in (
        ("attn.qkv", (3 * FLUX_H, FLUX_H)),
        ("attn.proj", (FLUX_H, FLUX_H)),
        ("mlp.0", (4 * FLUX_H, FLUX_H)),
        ("mlp.2", (FLUX_H, 4 * FLUX_H)),
    )
} | {
    "single_blocks.0.linear1": (7 * FLUX_H, FLUX_H),
    "single_blocks.0.linear2": (FLUX_H, 5 * FLUX_H),
}
FLUX_NORMS = (
    "double_blocks.0.img_attn.norm.query_norm",
    "double_blocks.0.img_attn.norm.key_norm",
    "double_blocks.0.txt_attn.norm.query_norm",
    "double_blocks.0.txt_attn.norm.key_norm",
    "single_blocks.0.norm.query_norm",
    "single_blocks.0.norm.key_norm",
)


def layer_bf16(p: str, n: int, k: int) -> list[RawTensor]:
    return [
        RawTensor(f"{p}.weight", "BF16", (n, k), bf16(scales(n * k, -0.05, 0.05))),
        *extras(p, n),
    ]


def flux(make) -> list[RawTensor]:
    """The reduced Flux model with its block linears made by `make` (layer_bf16: unquantized)."""
    out = [t for p, (n, k) in FLUX_PLAIN.items() for t in layer_bf16(p, n, k)]
    out += [RawTensor(f"{p}.scale", "BF16", (FLUX_H,), bf16([1.0] * FLUX_H)) for p in FLUX_NORMS]
    for p, (n, k) in FLUX_QUANTIZED.items():
        out += make(p, n, k)
    return out


def flux_broken() -> list[RawTensor]:
    """The FP8 Flux model with three problems ComfyUI stops on, each in its own layer."""
    out = flux(layer_fp8)
    qkv, proj, lin2 = (
        "double_blocks.0.img_attn.qkv",
        "double_blocks.0.txt_attn.proj",
        "single_blocks.0.linear2",
    )
    # an INT8 layer whose scale is F16 (ComfyUI's int8 kernels need F32)
    out = [t for t in out if not t.name.startswith(qkv + ".")] + layer_int8(
        qkv, 3 * FLUX_H, FLUX_H, convrot=False, scale_dtype="F16"
    )
    # a marker left on a layer that fell back to BF16
    out = [t for t in out if not t.name.startswith(proj + ".")] + [
        *layer_bf16(proj, FLUX_H, FLUX_H),
        RawTensor(f"{proj}.weight_scale", "F32", (), f32([0.01])),
        marker_tensor(proj, {"format": "float8_e4m3fn"}),
    ]
    # an FP8 layer whose scale was dropped
    out = [t for t in out if t.name != f"{lin2}.weight_scale"]
    return out


EXAMPLES = {
    "fp8_e4m3fn.safetensors": lambda: model(layer_fp8),
    "int8_convrot.safetensors": lambda: model(layer_int8),
    "nvfp4.safetensors": lambda: model(layer_nvfp4),
    "mxfp8.safetensors": lambda: model(layer_mxfp8),
    "w4a8_codebook.safetensors": lambda: model(layer_w4a8),
    "w4a4_convrot.safetensors": lambda: model(layer_w4a4),
    "awq_w4a16.safetensors": lambda: model(layer_awq),
    "broken_seeds.safetensors": broken,
    "w6a8_int8.safetensors": lambda: model(layer_w6a8),  # last: earlier files keep their bytes
}
#: in examples/flux/ (made after the others, so theirs keep their bytes)
FLUX_DIR = "flux"
FLUX_EXAMPLES = {
    "flux_bf16.safetensors": lambda: flux(layer_bf16),
    "flux_fp8.safetensors": lambda: flux(layer_fp8),
    "flux_nvfp4.safetensors": lambda: flux(layer_nvfp4),
    "flux_broken.safetensors": flux_broken,
}


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"format": "pt", "producer": "quantcheck examples/make_examples.py"}
    (out / FLUX_DIR).mkdir(exist_ok=True)
    for folder, made in ((out, EXAMPLES), (out / FLUX_DIR, FLUX_EXAMPLES)):
        for name, make in made.items():
            write_safetensors(folder / name, make(), meta)
            print(f"wrote {folder / name}")
    (out / "README.md").write_text(README)


EXPECTED = {
    "awq_w4a16.safetensors": "valid for ComfyUI; sglang has no AWQ support (QC601)",
    "w6a8_int8.safetensors": "loads on the newest ComfyUI step (2026-09-29, PR #16483 "
    "[GUESS]); ComfyUI up to 0271a469 lacks the format (QC610 with `--target "
    "comfyui@0271a469`; `fix --target comfyui@0271a469` relabels it asym_w4a8_int8); "
    "sglang has no W6A8 (QC601)",
    "broken_seeds.safetensors": "the seed errors: QC305 ×2, QC304, QC316 (see `quantcheck check`)",
}
FLUX_EXPECTED = {
    "flux_bf16.safetensors": "not quantized: the reference the others are made like",
    "flux_fp8.safetensors": "loads in sglang, ComfyUI, Forge Neo and SD.Next (FP8 runs emulated "
    "below sm_89 and with --cpu); InvokeAI degraded; musubi fails (ConvRot INT8 only)",
    "flux_nvfp4.safetensors": "loads in ComfyUI, Forge Neo, SD.Next (NVFP4 native from sm_100) "
    "and sglang >= 0.5.20 (0.5.19 fails); InvokeAI, sd.cpp, DiffSynth and musubi fail",
    "flux_broken.safetensors": "ComfyUI fails (QC301: an FP8 layer's weight_scale dropped; "
    "ComfyUI 0.33.0 stops with \"'NoneType' object has no attribute 'clone'\"), QC304 (a stale "
    "marker on a BF16 layer), and for sglang QC305 (an F16 INT8 scale) and QC602 (FP8 + INT8)",
}
README = (
    """# Example checkpoints

Made by `python examples/make_examples.py examples` (deterministic, standard library only).
Two transformer blocks, six linears each, 128×128, in ComfyUI's per-layer format.

| file | format | expected |
|---|---|---|
"""
    + "\n".join(
        f"| `{n}` | {n.split('.')[0]} | {EXPECTED.get(n, 'valid for every runtime')} |"
        for n in EXAMPLES
    )
    + "\n"
    + """
## flux/: a model ComfyUI's own loader takes

A reduced Flux.1 [dev]-shaped diffusion model (hidden 128, one double and one single block,
the keys Black Forest Labs' files use): ComfyUI's UNETLoader detects it as FLUX and loads it
(ComfyUI 0.33.0 --cpu, `make test-comfyui-integration`), so the node pack's tests and a first
try run through the real loader. The block linears are quantized; embedders, modulations and
the final layer stay BF16.

| file | expected |
|---|---|
"""
    + "\n".join(f"| `flux/{n}` | {FLUX_EXPECTED[n]} |" for n in FLUX_EXAMPLES)
    + "\n"
)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).parent))
