"""Write a realistic-size ComfyUI INT8 checkpoint as a sparse file, for header benchmarks.

The header and the `.comfy_quant` markers are real; the weights are holes, so the default file
(60 transformer blocks of hidden size 3072: 3600 tensors, about 19 GiB logical) takes almost
no disk space. Every linear gets an `int8_tensorwise` marker, an I8 weight, an F32 [N, 1] scale
and a BF16 bias; each block also has four BF16 norm weights.

    python benchmarks/make_big_checkpoint.py OUT.safetensors [blocks=60] [hidden=3072]
"""

from __future__ import annotations

import json
import struct
import sys

ATTENTION = (
    "attn.to_q",
    "attn.to_k",
    "attn.to_v",
    "attn.add_q_proj",
    "attn.add_k_proj",
    "attn.add_v_proj",
    "attn.to_out.0",
    "attn.to_add_out",
)
NORMS = ("attn.norm_q", "attn.norm_k", "attn.norm_added_q", "attn.norm_added_k")
MARKER = json.dumps({"format": "int8_tensorwise"}).encode()

#: (name, dtype, shape, byte size, payload or None for a hole)
Tensor = tuple[str, str, list[int], int, bytes | None]


def linear_shapes(blocks: int, hidden: int) -> dict[str, tuple[int, int]]:
    """(out_features, in_features) of every linear layer, by layer prefix."""
    ffn = 4 * hidden
    shapes: dict[str, tuple[int, int]] = {}
    for b in range(blocks):
        p = f"model.diffusion_model.transformer_blocks.{b}"
        for name in ATTENTION:
            shapes[f"{p}.{name}"] = (hidden, hidden)
        for mlp in ("img_mlp", "txt_mlp"):
            shapes[f"{p}.{mlp}.net.0.proj"] = (ffn, hidden)
            shapes[f"{p}.{mlp}.net.2"] = (hidden, ffn)
        shapes[f"{p}.img_mod.1"] = (6 * hidden, hidden)
        shapes[f"{p}.txt_mod.1"] = (6 * hidden, hidden)
    return shapes


def tensors(blocks: int, hidden: int) -> list[Tensor]:
    """Every tensor of the checkpoint in file order."""
    out: list[Tensor] = []
    for prefix, (n, k) in linear_shapes(blocks, hidden).items():
        out.append((f"{prefix}.weight", "I8", [n, k], n * k, None))
        out.append((f"{prefix}.weight_scale", "F32", [n, 1], n * 4, None))
        out.append((f"{prefix}.comfy_quant", "U8", [len(MARKER)], len(MARKER), MARKER))
        out.append((f"{prefix}.bias", "BF16", [n], n * 2, None))
    for b in range(blocks):
        for name in NORMS:
            out.append(
                (
                    f"model.diffusion_model.transformer_blocks.{b}.{name}.weight",
                    "BF16",
                    [128],
                    256,
                    None,
                )
            )
    return out


def write(path: str, blocks: int = 60, hidden: int = 3072) -> tuple[int, int, int]:
    """Write the sparse checkpoint; return (tensors, header bytes, logical file size)."""
    return write_sparse(path, tensors(blocks, hidden))


def write_sparse(path: str, items: list[Tensor]) -> tuple[int, int, int]:
    """Write `items` in order as a sparse safetensors file (payloads written, the rest holes);
    return (tensors, header bytes, logical file size)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape, size, _ in items:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        base = f.tell()
        start = 0
        for _, _, _, size, payload in items:
            if payload is not None:
                f.seek(base + start)
                f.write(payload)
            start += size
        f.truncate(base + offset)
    return len(items), len(text), base + offset


def main(argv: list[str]) -> None:
    if not argv or len(argv) > 3 or argv[0].startswith("-"):
        sys.exit(__doc__)
    blocks = int(argv[1]) if len(argv) > 1 else 60
    hidden = int(argv[2]) if len(argv) > 2 else 3072
    count, header_bytes, size = write(argv[0], blocks, hidden)
    print(
        argv[0],
        count,
        "tensors",
        header_bytes,
        "header bytes",
        round(size / 2**30, 2),
        "GiB logical",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
