"""Generated base/LoRA pairs: quantized bases with real weights (quantcheck's codecs) and LoRAs
of every convention, for the LoRA tests, the rule table and the ComfyUI differential suite."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from quantcheck.io.build import RawTensor, marker_tensor, write_safetensors
from quantcheck.numeric import quantize
from quantcheck.numeric.arrays import dtype_name, to_bytes

#: format -> quantize options for the generated layers
FORMAT_OPTIONS: dict[str, dict] = {
    "float8_e4m3fn": {},
    "float8_e5m2": {},
    "int8_tensorwise": {"per_row": True},
    "nvfp4": {},
    "mxfp8": {},
    "convrot_w4a4": {"convrot_groupsize": 64},
    "asym_w4a8_int8": {"group_size": 16, "convrot_groupsize": 64},
    "w6a8_int8": {"group_size": 32, "convrot_groupsize": 64},
}
#: a Wan-like model: blocks.{i}.self_attn.{q,k,v,o}, cross_attn.{q,k,v,o}, ffn.{0,2}
WAN_LAYERS = (
    "self_attn.q",
    "self_attn.k",
    "self_attn.v",
    "self_attn.o",
    "cross_attn.q",
    "cross_attn.k",
    "cross_attn.v",
    "cross_attn.o",
)


def raw(name: str, a: np.ndarray) -> RawTensor:
    a = np.ascontiguousarray(a)
    return RawTensor(name, dtype_name(a), tuple(a.shape), to_bytes(a))


def quantized(prefix: str, w: np.ndarray, fmt: str) -> list[RawTensor]:
    """A layer of `fmt` from float32 `w` (bf16 when `fmt` is "bf16")."""
    if fmt == "bf16":
        import ml_dtypes

        return [raw(f"{prefix}.weight", w.astype(ml_dtypes.bfloat16))]
    layer = quantize(w, fmt, **FORMAT_OPTIONS.get(fmt, {}))
    out = [raw(f"{prefix}.{s}", a) for s, (_, a) in layer.tensors.items()]
    return [*out, marker_tensor(prefix, layer.marker)]


def awq_layer(prefix: str, n: int, k: int, g: int = 64) -> list[RawTensor]:
    """An awq_w4a16 layer (no quantizer: plausible codes and scales)."""
    rng = np.random.default_rng(1)
    codes = rng.integers(-128, 127, size=(n, k // 2), dtype=np.int8)
    import ml_dtypes

    scale = (np.full((k // g, n), 0.002, np.float32)).astype(ml_dtypes.bfloat16)
    zeros = np.full((k // g, n), 8.0, np.float32).astype(ml_dtypes.bfloat16)
    return [
        raw(f"{prefix}.weight", codes),
        raw(f"{prefix}.weight_scale", scale),
        raw(f"{prefix}.weight_zeros", zeros),
        marker_tensor(prefix, {"format": "awq_w4a16", "group_size": g}),
    ]


def weights(n: int, k: int, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, k)) * 0.02).astype(np.float32)


def wan_base(
    path: Path, fmt: str, *, blocks: int = 1, n: int = 128, k: int = 128, awq_at: str = ""
) -> dict[str, np.ndarray]:
    """A small Wan-like base in `fmt` (patch_embedding BF16); the float weights by layer."""
    tensors: list[RawTensor] = [raw("patch_embedding.weight", weights(n, 16, 0))]
    floats = {}
    for b in range(blocks):
        for i, name in enumerate(WAN_LAYERS):
            p = f"blocks.{b}.{name}"
            if p == awq_at:
                tensors += awq_layer(p, n, k)
                continue
            w = weights(n, k, 100 * b + i + 1)
            floats[p] = w
            tensors += quantized(p, w, fmt)
    write_safetensors(path, tensors)
    return floats


FLUX_LAYERS = (
    "double_blocks.0.img_attn.qkv",
    "double_blocks.0.img_attn.proj",
    "double_blocks.0.txt_attn.qkv",
    "single_blocks.0.linear1",
)


def flux_base(path: Path, fmt: str, n: int = 128, k: int = 128) -> dict[str, np.ndarray]:
    """A small Flux-like base (the layer names ComfyUI's detection reads)."""
    tensors: list[RawTensor] = []
    floats = {}
    for i, p in enumerate(FLUX_LAYERS):
        w = weights(n, k, 50 + i)
        floats[p] = w
        tensors += quantized(p, w, fmt)
    write_safetensors(path, tensors)
    return floats


def lora_factors(
    n: int, k: int, rank: int, seed: int, size: float = 0.05
) -> tuple[np.ndarray, np.ndarray]:
    """(up [n, r], down [r, k]) whose product is about `size` of a 0.02-RMS weight's norm."""
    rng = np.random.default_rng(seed)
    up = rng.standard_normal((n, rank)).astype(np.float32)
    down = rng.standard_normal((rank, k)).astype(np.float32)
    prod = np.linalg.norm(up @ down)
    want = size * 0.02 * np.sqrt(n * k)
    f = np.sqrt(want / prod)
    return (up * f).astype(np.float32), (down * f).astype(np.float32)


#: convention -> (module name of a base path, up suffix, down suffix)
def module_name(convention: str, path: str) -> str:
    if convention == "kohya":
        return "lora_unet_" + path.replace(".", "_")
    if convention == "comfyui":
        return "diffusion_model." + path
    if convention == "bare":
        return path
    if convention == "diffusers-flux":
        return "transformer." + path
    if convention == "lycoris":
        return "lycoris_" + path.replace(".", "_")
    if convention == "peft":
        return "base_model.model." + path
    if convention == "diffusers-wan":
        for a, b in (
            (".self_attn.q", ".attn1.to_q"),
            (".self_attn.k", ".attn1.to_k"),
            (".self_attn.v", ".attn1.to_v"),
            (".self_attn.o", ".attn1.to_out.0"),
            (".cross_attn.q", ".attn2.to_q"),
            (".cross_attn.k", ".attn2.to_k"),
            (".cross_attn.v", ".attn2.to_v"),
            (".cross_attn.o", ".attn2.to_out.0"),
        ):
            path = path.replace(a, b)
        return "transformer." + path
    raise ValueError(convention)


def write_lora(
    path: Path,
    paths: list[str],
    *,
    convention: str = "kohya",
    kind: str = "lora",
    n: int = 128,
    k: int = 128,
    rank: int = 8,
    size: float = 0.05,
    alpha: float | None = None,
    wrong_shape: str = "",
    text_encoder: int = 0,
    dora: bool = False,
) -> None:
    """A LoRA over `paths` of the given convention and adapter kind."""
    out: list[RawTensor] = []
    for i, p in enumerate(paths):
        x = module_name(convention, p)
        nn = n // 2 if p == wrong_shape else n
        up, down = lora_factors(nn, k, rank, 1000 + i, size)
        if kind == "lora":
            u, d = (".lora_up.weight", ".lora_down.weight")
            if convention in ("comfyui", "bare", "diffusers-wan", "diffusers-flux", "peft"):
                u, d = (".lora_B.weight", ".lora_A.weight")
            out += [raw(x + u, up), raw(x + d, down)]
        elif kind == "loha":
            up2, down2 = lora_factors(nn, k, rank, 2000 + i, 1.0)
            out += [
                raw(x + ".hada_w1_a", up),
                raw(x + ".hada_w1_b", down),
                raw(x + ".hada_w2_a", up2),
                raw(x + ".hada_w2_b", down2),
            ]
        elif kind == "lokr":
            w1 = np.random.default_rng(3000 + i).standard_normal((4, 4)).astype(np.float32)
            w2a, w2b = lora_factors(nn // 4, k // 4, rank, 4000 + i, size)
            out += [raw(x + ".lokr_w1", w1), raw(x + ".lokr_w2_a", w2a), raw(x + ".lokr_w2_b", w2b)]
        if alpha is not None:
            out.append(raw(x + ".alpha", np.asarray(alpha, np.float32)))
        if dora:
            out.append(raw(x + ".dora_scale", np.full((nn, 1), 0.02 * np.sqrt(k), np.float32)))
    for j in range(text_encoder):
        x = f"lora_te1_text_model_encoder_layers_{j}_mlp_fc1"
        up, down = lora_factors(64, 32, 4, 9000 + j)
        out += [raw(x + ".lora_up.weight", up), raw(x + ".lora_down.weight", down)]
    write_safetensors(path, out)
