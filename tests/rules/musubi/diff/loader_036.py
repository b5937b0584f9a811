"""musubi-tuner 0.3.6's pinned definitions (source.py `PINS_036`), run in a namespace of their own.

Their own code runs: the reader (`MemoryEfficientSafeOpen`, `load_safetensors`), the marker
decoding and routing (`comfy_quant_utils.py`), both quantizers' `load_and_quantize`, both
monkey patches, and `load_h3_text_encoder` down to its strict `load_state_dict`. What that code
reads from outside these files is patched, and only that:

- `tqdm` (a progress bar), `clean_memory_on_device` / `synchronize_device` (CUDA housekeeping),
  `HAS_TRITON` (False: the CPU has no Triton) and `logger`;
- `load_safetensors_with_lora_and_fp8` (`utils/lora_utils.py`): with no LoRA and no FP8 it hands
  the files to `quantizer.load_and_quantize`, which the stand-in does directly (the real one
  also expands NAME-0000k-of-0000n shard names, which these files do not have);
- `resolve_safetensors_files` (`minimax_h3/checkpoint.py`): the one file given;
- transformers' `Qwen3VLConfig.from_pretrained` (downloads MiniMaxAI/MiniMax-H3's config) and
  `Qwen3VLModel`, and accelerate's `init_empty_weights`: a stand-in model built from the file's
  own `.weight`/`.bias` names (model. -> language_model., as `normalize_h3_text_encoder_key`
  does), on the meta device, with nn.Embedding for the embeddings runtimes/musubi.py names and
  nn.Linear for every other 2-D weight [READ in transformers' Qwen3VLModel]. So missing or extra
  modules (QC86x) are not compared; the module kinds are.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import struct
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union  # noqa: UP035

from quantcheck.runtimes.musubi import TEXT_ENCODER_EMBEDDINGS

from .source import PINS_036, definition

#: The module names musubi's functions import inside their bodies (load_h3_text_encoder).
MODULES = (
    "musubi_tuner.modules.comfy_quant_utils",
    "musubi_tuner.modules.convrot_int8_utils",
    "musubi_tuner.modules.nvfp4_utils",
    "musubi_tuner.utils.safetensors_utils",
)


class Musubi036(types.SimpleNamespace):
    """The loaded definitions (`ns`) and the two ways a file reaches them."""

    ns: dict[str, Any]

    def gate(self, paths: list[str]) -> None:
        """A pre-quantized DiT as 0.3.6 streams it (`ConvRotInt8Quantizer.load_and_quantize`;
        an empty target list: conversion only, as musubi's text encoder and its own tests
        call it)."""
        self.ns["ConvRotInt8Quantizer"](target_layer_keys=[]).load_and_quantize(paths, None)

    def h3_header(self, path: str) -> None:
        """`classify_h3_transformer` as `load_h3_transformer` calls it without --convrot_int8:
        ConvRot allowed when the file has .comfy_quant tensors."""
        files = [Path(path)]
        marked = self.ns["has_comfy_quant_tensors"](files)
        self.ns["classify_h3_transformer"](files, allow_convrot_int8=marked)

    def text_encoder(self, path: str) -> Any:
        """`load_h3_text_encoder(path)` with the stand-ins above."""
        with _standins(self.ns, path):
            return self.ns["load_h3_text_encoder"](path, device="cpu")


def load(root: Path) -> Musubi036:
    """The pinned definitions under the verified folder `root`."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    ns: dict[str, Any] = {
        "__name__": __name__,  # a module in sys.modules (dataclass looks its fields up there)
        "json": json,
        "math": math,
        "os": os,
        "struct": struct,
        "np": np,
        "torch": torch,
        "nn": nn,
        "F": F,
        "dataclass": dataclass,
        "Path": Path,
        "Iterable": Iterable,
        "Mapping": Mapping,
        "Callable": Callable,
        "Any": Any,
        "Dict": dict,
        "List": list,
        "Optional": Optional,
        "Sequence": Sequence,
        "Set": set,
        "Tuple": tuple,
        "Union": Union,
        "logger": logging.getLogger("musubi_tuner_036"),
        "tqdm": lambda items, **_: items,
        "clean_memory_on_device": lambda device: None,
        "synchronize_device": lambda device: None,
        "HAS_TRITON": False,
        "resolve_safetensors_files": lambda path: [Path(path)],
    }
    for key in PINS_036:
        rel, _, name = key.partition("::")
        # dont_inherit: this module's `from __future__ import annotations` stays out of theirs
        exec(compile(definition(root / rel, name), rel, "exec", dont_inherit=True), ns)
    return Musubi036(ns=ns)


def _through(model_files: list[str], quantizer: Any, **kwargs: Any) -> Any:
    """`load_safetensors_with_lora_and_fp8` without LoRA or FP8: the quantizer's own load."""
    return quantizer.load_and_quantize(
        model_files,
        kwargs["calc_device"],
        move_to_device=kwargs.get("move_to_device", False),
        disable_numpy_memmap=kwargs.get("disable_numpy_memmap", False),
    )


@contextlib.contextmanager
def _standins(ns: dict[str, Any], path: str) -> Iterator[None]:
    """transformers, accelerate and musubi's own modules, for the imports inside
    `load_h3_text_encoder`, while it runs."""
    header = _header(path)
    config = types.SimpleNamespace(
        text_config=types.SimpleNamespace(hidden_size=ns["TEXT_WIDTH"]), header=header
    )
    modules: dict[str, Any] = {
        "transformers": types.SimpleNamespace(
            Qwen3VLConfig=types.SimpleNamespace(from_pretrained=lambda *a, **k: config),
            Qwen3VLModel=lambda cfg: _model(cfg.header, ns["normalize_h3_text_encoder_key"]),
        ),
        "accelerate": types.SimpleNamespace(init_empty_weights=contextlib.nullcontext),
        "musubi_tuner.utils.lora_utils": types.SimpleNamespace(
            load_safetensors_with_lora_and_fp8=_through
        ),
        **dict.fromkeys(MODULES, types.SimpleNamespace(**ns)),
    }
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


def _header(path: str) -> dict[str, tuple[str, tuple[int, ...]]]:
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        raw = json.loads(f.read(size))
    return {k: (v["dtype"], tuple(v["shape"])) for k, v in raw.items() if k != "__metadata__"}


def _model(header: dict[str, tuple[str, tuple[int, ...]]], normalize: Callable[[str], str]) -> Any:
    """A stand-in Qwen3VLModel with the file's modules (see the module docstring)."""
    import torch
    from torch import nn

    embeddings = {normalize(m) for m in TEXT_ENCODER_EMBEDDINGS}
    weights: dict[str, tuple[int, ...]] = {}
    biases: dict[str, tuple[int, ...]] = {}
    for name, (_, shape) in header.items():
        key = normalize(name)
        if key.endswith(".weight"):
            weights[key[: -len(".weight")]] = shape
        elif key.endswith(".bias"):
            biases[key[: -len(".bias")]] = shape
    root = nn.Module()
    root.add_module("language_model", nn.Module())
    for module in sorted(set(weights) | set(biases), key=lambda m: m.count(".")):
        found = weights.get(module)
        if found is not None and len(found) == 2 and module in embeddings:
            leaf: nn.Module = nn.Embedding(found[0], found[1], device="meta")
        elif found is not None and len(found) == 2:
            leaf = nn.Linear(found[1], found[0], bias=module in biases, device="meta")
        else:
            leaf = nn.Module()
            for pname, pshape in (("weight", found), ("bias", biases.get(module))):
                if pshape is not None:
                    leaf.register_parameter(pname, nn.Parameter(torch.empty(pshape, device="meta")))
        _place(root, module, leaf)
    return root


def _place(root: Any, dotted: str, leaf: Any) -> None:
    from torch import nn

    *parents, last = dotted.split(".")
    node = root
    for part in parents:
        child = node._modules.get(part)
        if child is None:
            child = nn.Module()
            node.add_module(part, child)
        node = child
    node.add_module(last, leaf)
