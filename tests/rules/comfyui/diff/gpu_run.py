"""One GPU differential run: quantcheck's `check --gpu` JSON for every file and spec, and the
oracle's verdict for every layer of it (the gated tests read the result)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from safetensors import safe_open

from .gpu_compare import Comparison, Verdict, compare, oracle_mode
from .gpu_files import layers_of
from .gpu_stack import Stack, stack_from_entry

TARGET = "comfyui@0271a469"


def quantcheck_json(path: str, specs: list[str]) -> dict[str, Any]:
    """`quantcheck check PATH --target comfyui@0271a469 --gpu S... --output-format json`:
    the checkpoint's GPU entries by spec."""
    cmd = [sys.executable, "-m", "quantcheck", "check", path, "--target", TARGET]
    for spec in specs:
        cmd += ["--gpu", spec]
    cmd += ["--output-format", "json"]
    env = dict(os.environ)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"quantcheck check failed ({done.returncode}): {done.stderr[-2000:]}")
    doc = json.loads(done.stdout)
    targets = doc["checkpoints"][0]["targets"]
    return dict(targets.get(TARGET, {}).get("gpu", {}))


def has_e8m0(path: str) -> bool:
    with safe_open(path, framework="pt") as f:
        return any(str(f.get_slice(k).get_dtype()) == "F8_E8M0" for k in f.keys())  # noqa: SIM118


@dataclass
class Oracles:
    """One DeviceComfy per stack (building one runs ComfyUI's module code again)."""

    root: Path
    built: dict[Stack, Any] = field(default_factory=dict)

    def get(self, stack: Stack) -> Any:
        from .gpu_oracle import DeviceComfy

        if stack not in self.built:
            logging.disable(logging.WARNING)
            try:
                self.built[stack] = DeviceComfy(self.root, stack)
                self.built[stack].gate()
            finally:
                logging.disable(logging.NOTSET)
        return self.built[stack]


def judge_file(oracle: Any, path: str, stack: Stack) -> dict[str, tuple[str | None, Verdict]]:
    """The oracle's verdict for every marked layer of `path` on `stack`."""
    from .gpu_oracle import torch_fp8

    e8m0 = has_e8m0(path)
    fp8_device = torch_fp8(stack)
    out: dict[str, tuple[str | None, Verdict]] = {}
    for layer in layers_of(path):
        if e8m0 and oracle.aimdo:
            out[layer.name] = (
                layer.fmt,
                Verdict(
                    "refused",
                    "DynamicVRAM is on (main.py @783545f6, run) and [READ] its loader's dtype "
                    "table has no F8_E8M0 (comfy/utils.py load_safetensors): the file does "
                    "not load",
                    True,
                ),
            )
            continue
        path_taken = oracle.layer(layer.tensors, layer.n, layer.k)
        out[layer.name] = (layer.fmt, layer_mode(path_taken, layer, stack, fp8_device))
    return out


def layer_mode(path_taken: Any, layer: Any, stack: Stack, fp8_device: bool) -> Verdict:
    """`oracle_mode` of one layer (a gpu_files.Layer) on `stack`, with comfy-kitchen's eager
    table and AWQ batch limit."""
    from comfy_kitchen.backends import cuda

    from .gpu_oracle import EAGER_NATIVE

    return oracle_mode(
        path_taken,
        layer.fmt,
        layer.n,
        layer.k,
        eager_native=EAGER_NATIVE,
        awq_limit=cuda._AWQ_W4A16_MMA_M_LIMIT,
        device_type=stack.device_type,
        fp8_device=fp8_device,
    )


def run_spec(
    oracles: Oracles,
    files: dict[str, str],
    entries: dict[str, dict[str, Any]],
    spec: str,
    allow: dict[tuple[str, str], str],
) -> Comparison:
    """Compare one spec over every file; entries: file name -> {spec: entry}."""
    total = Comparison()
    for name, path in files.items():
        entry = entries[name].get(spec)
        if entry is None:
            total.disagree.append(f"{name} {spec}: quantcheck gave no GPU entry")
            continue
        stack = stack_from_entry(entry)
        verdicts = judge_file(oracles.get(stack), path, stack)
        one = compare(verdicts, entry, allow, label=f"{name} {spec}")
        total.agree += one.agree
        total.allowed += one.allowed
        total.disagree += one.disagree
        total.read_only += one.read_only
    return total
