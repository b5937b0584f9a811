"""Check quantcheck's `--gpu` verdicts on a real GPU (issue 24 item 5).

On a machine with a CUDA (or ROCm) device, ComfyUI installed and comfy-kitchen importable:

    python benchmarks/gpu_check.py --comfyui /path/to/ComfyUI [--gpu auto] [--tokens 4]

For every example checkpoint (examples/*.safetensors, or --examples DIR) it reads the file with
ComfyUI's own loader (`comfy.utils.load_torch_file(..., safe_load=True)` and
`convert_old_quants`), builds each marked layer with ComfyUI's own
`comfy.ops.pick_operations(...)` Linear on the device (what ComfyUI's model builder does per
layer), loads the layer's tensors and runs one forward of `--tokens` tokens. While it runs,
the dispatch points are wrapped to record which path ran: `QuantizedTensor.dequantize` on the
weight (the dequantize fallback), comfy-kitchen's registry choice per op
(`registry.get_capable_backend`), torch's own `_scaled_mm` / `scaled_mm` / `_int_mm`, and
comfy-kitchen's "falling back to dequantization" warnings. Each layer's observed mode
(native / emulated / refused) is compared with `quantcheck check FILE --target comfyui --gpu
SPEC --output-format json` for the same device (`--gpu auto` by default: quantcheck reads the
local device). Exit 0 when every layer agrees, 1 when some differ (listed), 2 when it could not
run; with no CUDA device it prints one line and exits 0. The examples are small: a run takes
seconds (the 5-minute budget is for first-call kernel compilation).

ComfyUI's DynamicVRAM (set up by its main.py) is not started here: files load through
safe_open, as with `--disable-dynamic-vram`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from quantcheck.textsafe import say, say_error

ROOT = Path(__file__).resolve().parents[1]
#: comfy-kitchen backends that are device kernels (not its portable torch code)
DEVICE_BACKENDS = frozenset({"cuda", "hip", "triton"})
#: comfy-kitchen eager ops that dequantize the weight (the others call torch's own
#: low-precision kernels: `_int_mm`, `scaled_mm`)
EAGER_DEQUANTIZE = frozenset({"convrot_w4a4_linear", "gemv_awq_w4a16"})
#: the comfy-kitchen ops that are a layer's matmul (quantizers and dequantizers aside)
MATMUL_OPS = frozenset(
    {
        "int8_linear",
        "w4a8_int8_linear",
        "w4a8_packed_linear",
        "convrot_w4a4_linear",
        "gemv_awq_w4a16",
        "scaled_mm_nvfp4",
        "scaled_mm_mxfp8",
    }
)
#: the tokens up to which comfy-kitchen's AWQ kernel runs (its `_AWQ_W4A16_MMA_M_LIMIT`)
AWQ_TOKENS = 256


def skip_reason(torch_module: Any) -> str | None:
    """Why the check cannot run here (None: it can): no torch, or no CUDA/ROCm device."""
    if torch_module is None:
        return "torch is not installed"
    if not torch_module.cuda.is_available():
        version = getattr(torch_module, "__version__", "?")
        return f"no CUDA device (torch {version})"
    return None


@dataclass
class Events:
    """What one layer's forward did."""

    dequantized: bool = False
    backends: list[tuple[str, str]] = field(default_factory=list)
    torch_kernels: list[str] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)
    error: str = ""


def observed_mode(events: Events) -> str:
    """native / emulated / refused from what ran (see the module docstring)."""
    if events.error:
        return "refused"
    if events.dequantized or events.fallbacks:
        return "emulated"
    matmuls = [(op, b) for op, b in events.backends if op in MATMUL_OPS]
    if matmuls:
        op, backend = matmuls[-1]
        if backend in DEVICE_BACKENDS or op not in EAGER_DEQUANTIZE:
            return "native"
        return "emulated"
    return "native" if events.torch_kernels else "emulated"


def expected_mode(mode: str, tokens: int) -> str:
    """quantcheck's mode at `tokens` tokens (`depends`: the AWQ kernel's batch limit)."""
    if mode == "depends":
        return "native" if tokens <= AWQ_TOKENS else "emulated"
    return mode


def compare(observed: dict[str, str], entry: dict[str, Any], tokens: int) -> list[str]:
    """Disagreements between the observed modes (layer -> mode) and quantcheck's GPU entry."""
    execution = entry.get("execution", {})
    out = []
    for layer, mode in sorted(observed.items()):
        theirs = execution.get(layer)
        if theirs is None:
            out.append(f"{layer}: ran {mode}; quantcheck has no entry")
            continue
        want = expected_mode(theirs["mode"], tokens)
        if want != mode:
            out.append(
                f"{layer}: ran {mode}; quantcheck says {theirs['mode']} ({theirs['reason']})"
            )
    return out


def quantcheck_entry(path: Path, spec: str) -> dict[str, Any]:
    """quantcheck's `targets.comfyui.gpu[spec]` entry for `path`."""
    cmd = [sys.executable, "-m", "quantcheck", "check", str(path), "--target", "comfyui"]
    cmd += ["--gpu", spec, "--output-format", "json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr.strip()[-500:])
    targets = json.loads(done.stdout)["checkpoints"][0]["targets"]
    gpu = targets["comfyui"].get("gpu", {})
    return dict(gpu.get(spec) or next(iter(gpu.values()), {}))


class _Fallbacks(logging.Handler):
    def __init__(self, events: Events) -> None:
        super().__init__()
        self.events = events

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "falling back" in message:
            self.events.fallbacks.append(message)


@contextlib.contextmanager
def watching(torch: Any, events: Events, shape: tuple[int, int]) -> Iterator[None]:
    """Wrap the dispatch points for one forward (restored afterwards)."""
    from comfy_kitchen.registry import registry
    from comfy_kitchen.tensor.base import QuantizedTensor

    saved: list[tuple[Any, str, Any]] = []

    def wrap(owner: Any, name: str, make: Any) -> None:
        if hasattr(owner, name):
            real = getattr(owner, name)
            saved.append((owner, name, real))
            setattr(owner, name, make(real))

    def on_dequantize(real: Any) -> Any:
        def dequantize(qt: Any, *args: Any, **kwargs: Any) -> Any:
            if tuple(qt.shape) == shape:
                events.dequantized = True
            return real(qt, *args, **kwargs)

        return dequantize

    def on_pick(real: Any) -> Any:
        def get_capable_backend(func_name: str, kwargs: Any = None) -> Any:
            backend = real(func_name, kwargs)
            events.backends.append((func_name, backend))
            return backend

        return get_capable_backend

    def on_kernel(name: str) -> Any:
        def make(real: Any) -> Any:
            def kernel(*args: Any, **kwargs: Any) -> Any:
                events.torch_kernels.append(name)
                return real(*args, **kwargs)

            return kernel

        return make

    wrap(QuantizedTensor, "dequantize", on_dequantize)
    wrap(registry, "get_capable_backend", on_pick)
    wrap(torch, "_scaled_mm", on_kernel("torch._scaled_mm"))
    wrap(torch, "_int_mm", on_kernel("torch._int_mm"))
    wrap(torch, "int8_mm", on_kernel("torch.int8_mm"))
    wrap(torch.nn.functional, "scaled_mm", on_kernel("torch.nn.functional.scaled_mm"))
    handler = _Fallbacks(events)
    logging.getLogger().addHandler(handler)
    try:
        yield
    finally:
        logging.getLogger().removeHandler(handler)
        for owner, name, real in reversed(saved):
            setattr(owner, name, real)


def run_file(torch: Any, path: Path, tokens: int) -> dict[str, str]:
    """Every marked layer of `path` through ComfyUI on the device: layer -> observed mode."""
    import types

    import comfy.model_management
    import comfy.ops
    import comfy.utils

    sd, metadata = comfy.utils.load_torch_file(str(path), safe_load=True, return_metadata=True)
    sd, metadata = comfy.utils.convert_old_quants(sd, metadata=metadata or {})
    device = comfy.model_management.get_torch_device()
    config = types.SimpleNamespace(quant_config={"mixed_ops": True})
    ops = comfy.ops.pick_operations(
        torch.bfloat16, torch.bfloat16, load_device=device, model_config=config
    )
    observed = {}
    for key in sorted(k for k in sd if k.endswith(".comfy_quant")):
        name = key[: -len(".comfy_quant")]
        weight = sd.get(f"{name}.weight")
        if weight is None or weight.dim() != 2:
            continue
        conf = json.loads(sd[key].numpy().tobytes())
        packed = conf.get("format") in ("nvfp4", "asym_w4a8_int8", "convrot_w4a4", "awq_w4a16")
        n, k = weight.shape[0], weight.shape[1] * (2 if packed else 1)
        layer_sd = {key2: v for key2, v in sd.items() if key2.startswith(name + ".")}
        linear = ops.Linear(k, n, bias=f"{name}.bias" in sd, device=device, dtype=torch.bfloat16)
        events = Events()
        try:
            linear._load_from_state_dict(layer_sd, name + ".", {}, True, [], [], [])
            x = torch.randn(tokens, k, device=device, dtype=torch.bfloat16)
            with watching(torch, events, (n, k)), torch.no_grad():
                linear(x)
            torch.cuda.synchronize()
        except Exception as exc:
            events.error = f"{type(exc).__name__}: {exc}"
        observed[name] = observed_mode(events)
    return observed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comfyui", default=os.environ.get("COMFYUI_PATH"), help="ComfyUI dir")
    parser.add_argument("--examples", default=str(ROOT / "examples"), help="checkpoint dir")
    parser.add_argument("--gpu", default="auto", help="quantcheck --gpu SPEC for this device")
    parser.add_argument("--tokens", type=int, default=4, help="tokens per forward (M)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        torch = None
    reason = skip_reason(torch)
    if reason is not None:
        say(f"gpu_check: skipped: {reason}")
        return 0
    if not args.comfyui or not (Path(args.comfyui) / "comfy" / "ops.py").is_file():
        say_error("gpu_check: give --comfyui DIR (or COMFYUI_PATH): a ComfyUI checkout")
        return 2
    sys.path.insert(0, str(Path(args.comfyui).resolve()))
    started = time.monotonic()
    props = torch.cuda.get_device_properties(0)
    say(
        f"device: {props.name} (sm_{props.major}{props.minor}), torch {torch.__version__}, "
        f"CUDA {torch.version.cuda or '-'}, ROCm {torch.version.hip or '-'}; --gpu {args.gpu}"
    )
    failures = 0
    for path in sorted(Path(args.examples).glob("*.safetensors")):
        observed = run_file(torch, path, args.tokens)
        differ = compare(observed, quantcheck_entry(path, args.gpu), args.tokens)
        modes = ", ".join(
            f"{m} {sum(v == m for v in observed.values())}" for m in sorted(set(observed.values()))
        )
        say(
            f"{path.name}: {len(observed)} layers ({modes}): "
            f"{'agrees' if not differ else f'{len(differ)} differ'}"
        )
        for line in differ:
            say(f"  {line}")
        failures += len(differ)
    say(
        f"{'all agree' if not failures else f'{failures} layers differ'} "
        f"({time.monotonic() - started:.1f} s)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
