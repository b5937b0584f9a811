"""musubi-tuner's pinned definitions (source.py), executed in a namespace of their own.

What their code reads is patched: `MemoryEfficientSafeOpen` (musubi's safetensors reader,
`utils/safetensors_utils.py`, not run) is a stand-in that gives the same three things the
definitions use, `keys()`, `header[key]` (dtype and shape) and `get_tensor(key)` (read only for
`.comfy_quant` markers), from the file's own header and bytes. Everything else runs as written.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .source import CONVROT, PINS, TEXT_ENCODER, definition


class SafeOpen:
    """The stand-in for musubi's `MemoryEfficientSafeOpen` (a context manager)."""

    def __init__(self, path: str, disable_numpy_memmap: bool = False) -> None:
        self.path = path
        with open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            raw = json.loads(f.read(size))
        self.base = 8 + size
        self.header = {k: v for k, v in raw.items() if k != "__metadata__"}

    def __enter__(self) -> SafeOpen:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def keys(self) -> list[str]:
        return list(self.header)

    def get_tensor(self, key: str) -> Any:
        import torch

        entry = self.header[key]
        start, end = entry["data_offsets"]
        with open(self.path, "rb") as f:
            f.seek(self.base + start)
            data = bytearray(f.read(end - start))
        assert entry["dtype"] == "U8", key  # only markers are read
        return torch.frombuffer(data, dtype=torch.uint8).reshape(entry["shape"])


class Musubi(types.SimpleNamespace):
    """`inspect_convrot_int8_artifact(files, key_normalizer=None)`, and the text encoder's
    `normalize_h3_text_encoder_key` and `_validate_h3_text_encoder_convrot_topology`."""

    inspect_convrot_int8_artifact: Callable[..., Any]
    normalize_h3_text_encoder_key: Callable[[str], str]
    validate_text_encoder_topology: Callable[[Any], None]


def load(root: Path) -> Musubi:
    """The pinned definitions under the verified folder `root`."""
    import torch

    ns: dict[str, Any] = {
        "json": json,
        "torch": torch,
        "Path": Path,
        "dataclass": dataclass,
        "MappingProxyType": MappingProxyType,
        "Mapping": Mapping,
        "Callable": Callable,
        "Iterable": Iterable,
        "MemoryEfficientSafeOpen": SafeOpen,
    }
    for key in PINS:
        rel, _, name = key.partition("::")
        assert rel in (CONVROT, TEXT_ENCODER)
        exec(compile(definition(root / rel, name), rel, "exec"), ns)
    return Musubi(
        inspect_convrot_int8_artifact=ns["inspect_convrot_int8_artifact"],
        normalize_h3_text_encoder_key=ns["normalize_h3_text_encoder_key"],
        validate_text_encoder_topology=ns["_validate_h3_text_encoder_convrot_topology"],
    )
