"""Safetensors files built for remote tests: exact header lengths, hub-like folders."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

from quantcheck.io.build import RawTensor, build_safetensors, marker_tensor

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.safetensors"))


def exact_header_file(n: int) -> bytes:
    """A small valid file whose header length field is exactly `n` (padded metadata)."""
    data = b"\x00" * 16
    hdr = {
        "__metadata__": {"pad": ""},
        "a.weight": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
    }
    base = len(json.dumps(hdr, separators=(",", ":")).encode())
    hdr["__metadata__"]["pad"] = "x" * (n - base)
    text = json.dumps(hdr, separators=(",", ":")).encode()
    assert len(text) == n, (len(text), n)
    return struct.pack("<Q", n) + text + data


def big_file(weight_mib: int = 32) -> bytes:
    """One fp8 layer whose marker and scale come first and whose large weight comes last."""
    k = 16384
    rows = weight_mib * 1024 * 1024 // k
    return build_safetensors(
        [
            marker_tensor("blk.lin", {"format": "float8_e4m3fn"}),
            RawTensor("blk.lin.weight_scale", "F32", (), b"\x00\x00\x80\x3f"),
            RawTensor("blk.lin.weight", "F8_E4M3", (rows, k), bytes(rows * k)),
        ]
    )


def split_example(src: Path, folder: Path, stem: str = "model") -> list[str]:
    """Split an example into two shards plus `{stem}.safetensors.index.json`, by layer block."""
    raw = src.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8 : 8 + n])
    meta = hdr.pop("__metadata__", None)
    groups: list[list[RawTensor]] = [[], []]
    for name, e in hdr.items():
        b, end = e["data_offsets"]
        t = RawTensor(name, e["dtype"], tuple(e["shape"]), raw[8 + n + b : 8 + n + end])
        groups[0 if ".blocks.0." in name or "_blocks.0." in name else 1].append(t)
    names = [f"{stem}-0000{i + 1}-of-00002.safetensors" for i in range(2)]
    wmap: dict[str, str] = {}
    for shard, tensors in zip(names, groups, strict=True):
        (folder / shard).write_bytes(build_safetensors(tensors, meta))
        wmap.update({t.name: shard for t in tensors})
    index = {
        "metadata": {"total_size": sum(len(t.data) for g in groups for t in g)},
        "weight_map": wmap,
    }
    (folder / f"{stem}.safetensors.index.json").write_text(json.dumps(index))
    return names


def tree_listing(folder: Path) -> list[dict[str, object]]:
    """What the hub's tree API answers for `folder` (one level, files and directories)."""
    out: list[dict[str, object]] = []
    for p in sorted(folder.iterdir()):
        if p.is_dir():
            out.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": p.name})
        else:
            out.append({"type": "file", "oid": "0" * 40, "size": p.stat().st_size, "path": p.name})
    return out


def copy_examples(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for p in example_files():
        shutil.copy(p, dest / p.name)
