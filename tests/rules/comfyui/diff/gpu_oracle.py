"""ComfyUI's and comfy-kitchen's own device decisions, run on the CPU with a device's facts
patched in (issue 24 item 5). Kernels are not run for the device: what is recorded is which
path their code picks.

Executed unmodified (each file pinned whole, see source.py):
- comfy/model_management.py @783545f6: the module state the gates read (the torch-version
  parse, the XPU / MPS / NPU / MLU / ixuca probes, `--cpu`, `--directml`, `SUPPORT_FP8_OPS` and
  the AMD block that sets it for gfx1200/1201/gfx950), and the functions `is_nvidia`,
  `is_amd`, `is_intel_xpu`, `get_torch_device`, `supports_fp8_compute`,
  `supports_nvfp4_compute`, `supports_mxfp8_compute`, `cast_to`, ... (`MM_FUNCTIONS`). They
  read a `torch` facade: the real torch except `torch.version`, `torch.cuda`, `torch.xpu`,
  `torch.backends.mps`, which answer with the device's facts.
- comfy/quant_ops.py @0271a469 whole, with the real comfy-kitchen and the real torch's
  `torch.version.cuda` / `torch.version.hip` / `torch.cuda.is_available` patched: its
  `ck.registry.disable("cuda")` (CUDA < 13) and Triton switch act on comfy-kitchen's registry,
  in which comfy-kitchen's own CUDA backend `_register()` ran under the same patch.
- comfy/ops.py @0271a469 whole (`whole/comfy/ops.py`): `get_disabled_quant_formats`,
  `pick_operations` (its "Native ops: ..." line is captured) and the returned
  `MixedPrecisionOps.Linear`, loaded from the layer's tensors and run forward on the CPU.
- main.py / comfy/cli_args.py @783545f6: whether DynamicVRAM is on (`DeviceComfy.aimdo`).
- comfy-kitchen: each op the forward dispatched is put to its registry again with the call's
  tensors described on the device (`_OnDevice`) and the registry in the device's state; each
  layout's `supports_fast_matmul()` (MIN_SM_VERSION) under the device's capability.

[READ] (not executable here, taken from reading the code):
- `supports_int8_compute` is called by ops.py @0271a469 but is in no available
  model_management.py (783545f6 has none; the index has no newer copy). `INT8_GATE_READ`
  stands in for it, as read in the notes: False on Intel XPU, DirectML, ixuca, and MPS below
  torch 2.15.
- the HIP extension cannot load without ROCm (libamdhip64): its registration runs with the
  extension taken as loaded (`_register_hip`);
- what an eager (torch) kernel does on the device (`EAGER_NATIVE`), torch's own `scaled_mm`
  shape checks (FP8: both N and K multiples of 16), the AWQ kernel's batch limit
  (`_AWQ_W4A16_MMA_M_LIMIT`, read from comfy-kitchen), the DynamicVRAM loader's dtype table
  (no F8_E8M0: comfy/utils.py load_safetensors).
"""

from __future__ import annotations

import ast
import copy
import enum
import importlib.util
import logging
import operator
import os
import sys
import threading
import types
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import torch

from .gpu_stack import Stack

#: model_management functions executed (by name) beside its module-level state.
MM_FUNCTIONS = (
    "is_intel_xpu",
    "is_ascend_npu",
    "is_mlu",
    "is_ixuca",
    "get_torch_device",
    "is_nvidia",
    "is_amd",
    "cpu_mode",
    "mps_mode",
    "is_device_type",
    "is_device_cpu",
    "is_device_mps",
    "is_device_xpu",
    "is_device_cuda",
    "is_directml_enabled",
    "supports_fp8_compute",
    "supports_nvfp4_compute",
    "supports_mxfp8_compute",
    "device_supports_non_blocking",
    "cast_to",
    "cast_to_device",
    "sync_stream",
    "throw_exception_if_processing_interrupted",
)
#: The module-level assignments executed besides the probes (by target name).
MM_ASSIGNMENTS = (
    "cpu_state",
    "SUPPORT_FP8_OPS",
    "AMD_RDNA2_AND_OLDER_ARCH",
    "AMD_ENABLE_MIOPEN_ENV",
    "WINDOWS",
)


def INT8_GATE_READ(mm: types.ModuleType) -> Any:
    """[READ] stand-in for `comfy.model_management.supports_int8_compute` @0271a469."""

    def supports_int8_compute(device: Any = None) -> bool:
        if mm.is_intel_xpu() or mm.is_directml_enabled() or mm.is_ixuca():
            return False
        if mm.is_device_mps(device) or mm.mps_mode():
            return tuple(mm.torch_version_numeric) >= (2, 15)
        return True

    return supports_int8_compute


#: [READ] comfy-kitchen's eager implementations of the matmul ops the layouts call, on a CUDA
#: (or ROCm) device: True where the eager code is torch's own low-precision kernel
#: (`torch._int_mm`, `scaled_mm`), False where it dequantizes to floats first.
EAGER_NATIVE: dict[str, tuple[bool, str]] = {
    "int8_linear": (True, "eager int8_linear: torch._int_mm (cuBLASLt IMMA)"),
    "w4a8_int8_linear": (True, "eager w4a8_int8_linear: int4 codes to int8, torch._int_mm"),
    "convrot_w4a4_linear": (False, "eager convrot_w4a4_linear: int4 codes turned into floats"),
    "gemv_awq_w4a16": (False, "eager gemv_awq_w4a16: dequantize, then a float matmul"),
    "scaled_mm_nvfp4": (True, "eager scaled_mm_nvfp4: torch scaled_mm, FP4 blockwise"),
    "scaled_mm_mxfp8": (True, "eager scaled_mm_mxfp8: torch scaled_mm, MX blockwise"),
}
#: The ops whose choice decides a layer's matmul (quantizers and dequantizers aside).
MATMUL_OPS = frozenset(EAGER_NATIVE)


class _Props(types.SimpleNamespace):
    """What `torch.cuda.get_device_properties` returns."""


class _DeviceTorch:
    """The real torch, except what model_management reads about the device."""

    def __init__(self, stack: Stack) -> None:
        on_cuda = stack.vendor in ("nvidia", "amd")
        major, minor = stack.capability or (0, 0)
        props = _Props(major=major, minor=minor, gcnArchName=stack.arch, name=stack.vendor)
        self.version = types.SimpleNamespace(
            __version__=stack.torch, cuda=stack.cuda, hip=stack.hip
        )
        self.cuda = types.SimpleNamespace(
            is_available=lambda: on_cuda,
            get_device_properties=lambda device=None: props,
            get_device_capability=lambda device=None: (major, minor),
            current_device=lambda: 0,
            device_count=lambda: int(on_cuda),
            is_bf16_supported=lambda: on_cuda,
        )
        self.xpu = types.SimpleNamespace(
            device_count=lambda: int(stack.vendor == "intel"),
            is_available=lambda: stack.vendor == "intel",
            current_device=lambda: 0,
        )
        self.backends = types.SimpleNamespace(
            mps=types.SimpleNamespace(is_available=lambda: stack.vendor == "apple"),
            cudnn=types.SimpleNamespace(enabled=True, version=lambda: None),
            cuda=torch.backends.cuda,
        )

    @staticmethod
    def device(*args: Any) -> torch.device:
        """`torch.device(index)` is the accelerator's device `index` (CUDA / ROCm here)."""
        if len(args) == 1 and isinstance(args[0], int):
            return torch.device("cuda", args[0])
        return torch.device(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)


class _Args(types.SimpleNamespace):
    """ComfyUI's parsed command line: any switch not given reads as unset (None), as
    argparse's defaults of its store_true / optional switches do."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _args(stack: Stack) -> _Args:
    """ComfyUI's parsed command line as the gates read it (defaults, plus the device's
    switches: each `flags=` name as its argparse attribute)."""
    return _Args(
        cpu=stack.vendor == "cpu",
        directml=0 if stack.vendor == "directml" else None,
        deterministic=False,
        force_non_blocking=False,
        fast=set(),
        cuda_malloc=False,
        high_ram=False,
        **{flag.replace("-", "_"): stack.has(flag) for flag in SWITCHES},
    )


#: the launch switches the oracle hands to ComfyUI's code (quantcheck's `flags=` names)
SWITCHES = (
    "supports-fp8-compute",
    "enable-triton-backend",
    "disable-triton-backend",
    "disable-dynamic-vram",
    "enable-dynamic-vram",
    "highvram",
    "gpu-only",
    "novram",
)


def _mm_nodes(text: str) -> list[ast.stmt]:
    """The top-level statements of model_management.py the oracle executes, in file order:
    the probes from `xpu_available = False` to `if args.cpu:`, the named functions and
    assignments, the AMD `try:` right after `AMD_ENABLE_MIOPEN_ENV`, and `class CPUState`."""
    body = ast.parse(text).body
    chosen: list[ast.stmt] = []
    probing = after_amd = False
    for node in body:
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if "xpu_available" in targets:
            probing = True
        named = isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in (
            *MM_FUNCTIONS,
            "CPUState",
        )
        if probing or named or any(t in MM_ASSIGNMENTS for t in targets) or after_amd:
            chosen.append(node)
        after_amd = isinstance(node, ast.Assign) and "AMD_ENABLE_MIOPEN_ENV" in targets
        if probing and isinstance(node, ast.If) and ast.unparse(node.test) == "args.cpu":
            probing = False
    return chosen


def _model_management(root: Path, stack: Stack) -> types.ModuleType:
    """comfy.model_management for `stack`: its own state and gates, executed."""
    path = root / "comfy/model_management.py"
    text = path.read_text(encoding="utf-8")
    facade = _DeviceTorch(stack)
    mm = types.ModuleType("comfy.model_management")
    ns = mm.__dict__
    ns.update(
        torch=facade,
        args=_args(stack),
        logging=logging,
        os=os,
        Enum=enum.Enum,
        platform=types.SimpleNamespace(win32_ver=lambda: ("", "", "", "")),
        interrupt_processing=False,
        interrupt_processing_mutex=threading.RLock(),
        in_training=False,
        training_fp8_bwd=False,
        LARGEST_AIMDO_CASTED_WEIGHT=(None, 0),
        get_offload_stream=lambda device: None,
        current_stream=lambda device: None,
        lora_compute_dtype=lambda device: torch.float32,
    )
    sys.modules["torch_directml"] = types.SimpleNamespace(  # type: ignore[assignment]
        device=lambda index=None: torch.device("privateuseone", 0),
        device_name=lambda index=None: "DirectML",
    )
    try:
        for node in _mm_nodes(text):
            segment = ast.get_source_segment(text, node)
            assert segment is not None
            padded = "\n" * (node.lineno - 1) + segment  # tracebacks name the file's lines
            exec(compile(padded, str(path), "exec"), ns)
            ns["torch"] = facade  # `import torch.mps` in the MPS probe rebinds the name
    finally:
        del sys.modules["torch_directml"]
    mm.supports_int8_compute = INT8_GATE_READ(mm)
    return mm


@contextmanager
def _real_torch_is(stack: Stack) -> Iterator[None]:
    """The real torch answering with the device's facts (for comfy-kitchen and quant_ops)."""
    major, minor = stack.capability or (0, 0)
    props = _Props(major=major, minor=minor, gcnArchName=stack.arch, name=stack.vendor)
    on_cuda = stack.vendor in ("nvidia", "amd")
    with ExitStack() as patches:
        for target, name, value in (
            (torch.cuda, "is_available", lambda: on_cuda),
            (torch.cuda, "get_device_properties", lambda device=None: props),
            (torch.cuda, "get_device_capability", lambda device=None: (major, minor)),
            (torch.cuda, "current_device", lambda: 0),
            (torch.cuda, "device_count", lambda: int(on_cuda)),
            (torch.version, "cuda", stack.cuda),
            (torch.version, "hip", stack.hip),
            (torch.xpu, "is_available", lambda: stack.vendor == "intel"),
        ):
            patches.enter_context(mock.patch.object(target, name, value))
        yield


_REGISTRY_FIELDS = (
    "_backends",
    "_capabilities",
    "_constraints",
    "_priority",
    "_disabled",
    "_unavailable",
)


def _registry() -> Any:
    from comfy_kitchen.registry import registry

    return registry


def _snapshot() -> dict[str, Any]:
    reg = _registry()
    state = {name: copy.copy(getattr(reg, name)) for name in _REGISTRY_FIELDS}
    state["_compute_capability"] = reg.__dict__.get("_compute_capability")
    return state


def _restore(state: dict[str, Any]) -> None:
    reg = _registry()
    for name in _REGISTRY_FIELDS:
        setattr(reg, name, copy.copy(state[name]))
    reg.__dict__.pop("_compute_capability", None)
    if state["_compute_capability"] is not None:
        reg.__dict__["_compute_capability"] = state["_compute_capability"]


#: The comfy-kitchen layouts ComfyUI @0271a469 uses (QUANT_ALGOS' comfy_tensor_layout bases).
KITCHEN_LAYOUTS = (
    "TensorCoreFP8Layout",
    "TensorCoreNVFP4Layout",
    "TensorCoreMXFP8Layout",
    "TensorWiseINT8Layout",
    "TensorCoreConvRotW4A4Layout",
    "AsymW4A8Int8Layout",
    "TensorCoreAWQW4A16Layout",
)


def _fast_matmul() -> dict[str, bool]:
    """Each layout's own `supports_fast_matmul()` (its MIN_SM_VERSION against
    `get_cuda_capability()`), under the device's facts: what ComfyUI's MoE expert path asks."""
    import comfy_kitchen.tensor as kitchen
    from comfy_kitchen.tensor.base import get_cuda_capability

    get_cuda_capability.cache_clear()  # lru_cache: a process sees one device; this one
    try:
        return {
            name: bool(getattr(kitchen, name).supports_fast_matmul()) for name in KITCHEN_LAYOUTS
        }
    finally:
        get_cuda_capability.cache_clear()


def _stub(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


class _Anything(types.ModuleType):
    """A stub module for ops.py's imports it does not use on this path."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _exec_module(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "comfy"
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class _PerformanceFeature(enum.Enum):
    Fp16Accumulation = "fp16_accumulation"
    Fp8MatrixMultiplication = "fp8_matrix_mult"
    CublasOps = "cublas_ops"
    AutoTune = "autotune"


@dataclass
class Gate:
    """What ComfyUI decides for the device before any layer: the formats it emulates, its
    log line, and comfy-kitchen's backends (name -> available and not disabled)."""

    disabled: frozenset[str]
    native_line: str
    backends: dict[str, bool]


@dataclass
class Call:
    """One comfy-kitchen op the layer's forward dispatched, and the backend comfy-kitchen's
    registry picks for it on the device (None: no capable backend, with why)."""

    op: str
    backend: str | None
    why: str = ""


@dataclass
class LayerPath:
    """What one layer's forward does on the device."""

    quantized: bool  # ComfyUI ran the quantized matmul (False: dequantize, then a float one)
    full_precision_mm: bool
    calls: list[Call] = field(default_factory=list)
    error: str = ""


def register_backends(stack: Stack, *, triton: bool) -> None:
    """comfy-kitchen's own backend registration (cuda, triton, and hip on AMD), run again
    under the device's facts (call inside `_real_torch_is(stack)`). `triton`: `import triton`
    works on that machine ([READ] for a switch that needs it: quant_ops.py imports it)."""
    from comfy_kitchen.backends import cuda
    from comfy_kitchen.backends import triton as triton_backend

    # the registry caches the capability it read (a CPU forward leaves None): read it again
    _registry().__dict__.pop("_compute_capability", None)
    with mock.patch.object(cuda, "_CUBLASLT_AVAILABLE", _has_cublaslt(stack)):
        cuda._register()
    # `_register` hands the registry `__import__(__name__, fromlist=__all__)`, whose kernel
    # submodules import triton: with `__all__` empty it hands the package (never called here)
    with (
        mock.patch.object(triton_backend, "_TRITON_AVAILABLE", triton),
        mock.patch.object(triton_backend, "__all__", []),
    ):
        triton_backend._register()
    if stack.vendor == "amd":
        _register_hip()


def _register_hip() -> None:
    """comfy-kitchen's HIP backend registration (its arch manifest, WMMA test and
    constraints) and the priority comfy_kitchen/__init__.py gives it, run under the
    device's facts. [READ] its extension loads on a ROCm machine (here libamdhip64 is
    missing): `_EXT_AVAILABLE` is patched True, nothing of the extension is called."""
    import comfy_kitchen
    from comfy_kitchen.backends import hip

    init = Path(comfy_kitchen.__file__)
    text = init.read_text(encoding="utf-8")
    switch = next(
        node
        for node in ast.parse(text).body
        if isinstance(node, ast.If) and "torch.version" in ast.unparse(node.test)
    )
    segment = ast.get_source_segment(text, switch)
    assert segment is not None
    hip._visible_gfx_arches.cache_clear()
    try:
        with mock.patch.object(hip, "_EXT_AVAILABLE", True):
            hip._register()
            exec(compile(segment, str(init), "exec"), dict(vars(comfy_kitchen)))
    finally:
        hip._visible_gfx_arches.cache_clear()


def _has_cublaslt(stack: Stack) -> bool:
    """[READ] the CUDA extension dlopens libcublasLt.so.13, which torch's cu13 wheels
    ship (cublaslt_runtime.h); none on this CPU machine."""
    cuda_version = stack.cuda or "0"
    return stack.vendor == "nvidia" and int(cuda_version.split(".")[0]) >= 13


def forward_calls(
    module: Any, x: torch.Tensor, n: int, k: int
) -> tuple[bool, list[tuple[str, dict[str, Any]]], str]:
    """Run `module(x)` on the CPU: (the quantized matmul ran, i.e. no [n, k] weight was
    dequantized; the comfy-kitchen ops it asked the registry for, with their arguments; the
    error it raised, or "")."""
    from comfy_kitchen.tensor.base import QuantizedTensor

    seen: list[tuple[str, dict[str, Any]]] = []
    dequantized: list[bool] = []
    reg = _registry()
    real_get = reg.get_implementation
    real_dequantize = QuantizedTensor.dequantize

    def get_implementation(func_name: str, backend: Any = None, kwargs: Any = None) -> Any:
        seen.append((func_name, dict(kwargs or {})))
        return real_get(func_name, backend=backend, kwargs=kwargs)

    def dequantize(qt: Any, *args: Any, **kwargs: Any) -> Any:
        if tuple(qt.shape) == (n, k):
            dequantized.append(True)
        return real_dequantize(qt, *args, **kwargs)

    error = ""
    with (
        mock.patch.object(reg, "get_implementation", get_implementation),
        mock.patch.object(QuantizedTensor, "dequantize", dequantize),
    ):
        try:
            with torch.no_grad():
                module(x)
        except Exception as exc:
            error = f"forward: {type(exc).__name__}: {exc}"
    quantized = isinstance(getattr(module, "weight", None), QuantizedTensor) and not dequantized
    return quantized, seen, error


def pick(op: str, kwargs: dict[str, Any], state: dict[str, Any], device_type: str) -> Call:
    """comfy-kitchen's registry choice for `op` on a device: the recorded call's tensors
    re-described on the device (shape, dtype, device type), the registry in `state` (what the
    device's registration left); the registry's state is put back afterwards."""
    from comfy_kitchen.exceptions import NoCapableBackendError

    on_device = {key: _on(value, device_type) for key, value in kwargs.items()}
    before = _snapshot()
    _restore(state)
    try:
        return Call(op, _registry().get_capable_backend(op, on_device))
    except NoCapableBackendError as exc:
        return Call(op, None, str(exc))
    finally:
        _restore(before)


class DeviceComfy:
    """ComfyUI (ops/quant_ops @0271a469, model_management @783545f6) and comfy-kitchen 0.2.40
    for one device, loaded on the CPU."""

    def __init__(self, root: Path, stack: Stack) -> None:
        self.stack = stack
        for name in [n for n in sys.modules if n == "comfy" or n.startswith("comfy.")]:
            del sys.modules[name]
        package = _stub("comfy")
        package.__path__ = []
        args = _args(stack)
        package.cli_args = _stub(
            "comfy.cli_args", args=args, PerformanceFeature=_PerformanceFeature
        )
        for name in ("float", "rmsnorm", "utils", "pinned_memory"):
            setattr(package, name, _stub(f"comfy.{name}"))
        package.memory_management = _stub("comfy.memory_management", aimdo_enabled=False)
        aimdo = _stub("comfy_aimdo")
        aimdo.model_vbar = sys.modules["comfy_aimdo.model_vbar"] = _Anything("model_vbar")
        aimdo.torch = sys.modules["comfy_aimdo.torch"] = _Anything("torch")
        self.mm = _model_management(root, stack)
        package.model_management = sys.modules["comfy.model_management"] = self.mm
        self.cpu_state = _snapshot()
        try:
            with _real_torch_is(stack):
                # a fresh process: nothing disabled yet (an earlier quant_ops in this session,
                # e.g. the loader suite's on the CPU, disabled "cuda" in the shared registry)
                _registry()._disabled = set()
                register_backends(stack, triton=stack.has("enable-triton-backend"))
                with _triton_module(stack.has("enable-triton-backend")):
                    self.quant_ops = _exec_module("comfy.quant_ops", root / "comfy/quant_ops.py")
                _registry()._compute_capability  # noqa: B018 - computed under the patch
                self.device_state = _snapshot()
                self.fast_matmul = _fast_matmul()
        finally:
            _restore(self.cpu_state)
        package.quant_ops = self.quant_ops
        self.ops = _exec_module("comfy.ops", root / "whole/comfy/ops.py")
        package.ops = self.ops
        self.aimdo = self.dynamic_vram(root)

    def dynamic_vram(self, root: Path) -> bool:
        """Whether ComfyUI @783545f6 turns DynamicVRAM on for this device: main.py's own
        `if args.enable_dynamic_vram or (enables_dynamic_vram() and dynamic_vram_supported())`
        and the torch >= 2.8 test inside it, evaluated with their functions (cli_args.py,
        main.py). [READ] comfy-aimdo's `init_devices` is taken to succeed (a working install)."""
        from .source import function_source

        ns: dict[str, Any] = {"args": _args(self.stack), "comfy": sys.modules["comfy"]}
        for rel, name in (
            ("comfy/cli_args.py", "enables_dynamic_vram"),
            ("main.py", "dynamic_vram_supported"),
        ):
            exec(compile(function_source(root / rel, name), str(root / rel), "exec"), ns)
        text = (root / "main.py").read_text(encoding="utf-8")
        switch = next(
            node
            for node in ast.parse(text).body
            if isinstance(node, ast.If) and "dynamic_vram_supported()" in ast.unparse(node.test)
        )
        if not eval(compile(ast.Expression(switch.test), "main.py", "eval"), ns):
            return False
        too_old = switch.body[0]
        assert isinstance(too_old, ast.If)
        return not eval(compile(ast.Expression(too_old.test), "main.py", "eval"), ns)

    def device(self) -> Any:
        """The load device, as ComfyUI's own `get_torch_device` gives it."""
        return self.mm.get_torch_device()

    def gate(self) -> Gate:
        records: list[str] = []

        class _Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                records.append(record.getMessage())

        handler = _Keep()
        root_logger = logging.getLogger()
        old_level = root_logger.level
        root_logger.addHandler(handler)
        root_logger.setLevel(logging.INFO)
        try:
            config = types.SimpleNamespace(quant_config={"mixed_ops": True})
            ops = self.ops.pick_operations(
                torch.bfloat16, torch.bfloat16, load_device=self.device(), model_config=config
            )
        finally:
            root_logger.removeHandler(handler)
            root_logger.setLevel(old_level)
        self.mixed = ops
        line = next((r for r in records if r.startswith("Native ops:")), "")
        state = self.device_state
        backends = {
            name: name in state["_backends"] and name not in state["_disabled"]
            for name in ("cuda", "triton", "hip", "eager")
        }
        return Gate(frozenset(ops._disabled), line, backends)

    def layer(self, tensors: dict[str, torch.Tensor], n: int, k: int, m: int = 4) -> LayerPath:
        """Load one layer's tensors (suffix -> tensor) into ComfyUI's MixedPrecisionOps.Linear
        for this device and run one forward of `m` tokens on the CPU, recording whether the
        quantized matmul or the dequantize fallback ran and which comfy-kitchen ops it
        dispatched; then ask comfy-kitchen's registry, in the device's state, which backend it
        picks for each of those calls."""
        if not hasattr(self, "mixed"):
            self.gate()
        linear = self.mixed.Linear(k, n, bias=False, device=torch.device("cpu"))
        sd = {f"layer.{suffix}": value for suffix, value in tensors.items()}
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        try:
            linear._load_from_state_dict(sd, "layer.", {}, True, missing, unexpected, errors)
        except Exception as exc:
            return LayerPath(False, False, error=f"load: {type(exc).__name__}: {exc}")
        x = torch.randn(m, k, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
        quantized, seen, error = forward_calls(linear, x, n, k)
        path = LayerPath(quantized, bool(linear._full_precision_mm), error=error)
        path.calls = [
            pick(op, kw, self.device_state, self.stack.device_type)
            for op, kw in seen
            if op in MATMUL_OPS
        ]
        return path


@contextmanager
def _triton_module(present: bool) -> Iterator[None]:
    """`import triton` answering with a stub (quant_ops.py logs its version) when `present`.
    Nothing of Triton runs: the oracle only asks comfy-kitchen's registry."""
    if not present or "triton" in sys.modules:
        yield
        return
    sys.modules["triton"] = types.SimpleNamespace(__version__="stub")  # type: ignore[assignment]
    try:
        yield
    finally:
        del sys.modules["triton"]


#: the definitions of torch's own FP8 device test that run (torch/testing/_internal/common_cuda.py)
TORCH_FP8_NODES = ("ROCM_VERSION", "SM90OrLater", "evaluate_platform_supports_fp8")


def torch_fp8(stack: Stack) -> bool:
    """torch's own `evaluate_platform_supports_fp8` (torch/testing/_internal/common_cuda.py,
    the installed torch), run with the device's facts in a torch facade: whether torch's
    `_scaled_mm` takes FP8 operands on the device. It answers for CUDA / ROCm / XPU devices and
    otherwise for the CPU: not for MPS or DirectML tensors ([READ] torch has no FP8 `_scaled_mm`
    for them)."""
    if stack.vendor in ("apple", "directml"):
        return False
    internal = Path(torch.__file__).parent / "testing/_internal"
    ns: dict[str, Any] = {"torch": _DeviceTorch(stack), "operator": operator}
    # common_utils' LazyVal (its module imports test-only packages: only these two run)
    _exec_named(internal / "common_utils.py", ("make_lazy_class", "LazyVal"), ns)
    _exec_named(internal / "common_cuda.py", TORCH_FP8_NODES, ns)
    return bool(ns["evaluate_platform_supports_fp8"]())


def _exec_named(path: Path, names: tuple[str, ...], ns: dict[str, Any]) -> None:
    """Execute the top-level definitions and assignments of `path` called `names`, in file
    order, in `ns` (their line numbers kept for tracebacks)."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if getattr(node, "name", None) in names or set(targets) & set(names):
            segment = ast.get_source_segment(text, node)
            assert segment is not None
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.decorator_list:
                segment = (
                    "\n".join(f"@{ast.get_source_segment(text, d)}" for d in node.decorator_list)
                    + "\n"
                    + segment
                )
            exec(compile("\n" * (node.lineno - 1) + segment, str(path), "exec"), ns)


class _OnDevice(torch.Tensor):
    """A tensor's shape, dtype and strides on another device, with no storage: what
    comfy-kitchen's constraint checks read."""

    @staticmethod
    def __new__(cls, like: torch.Tensor, device: str) -> _OnDevice:
        return torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined,no-any-return]
            cls, like.shape, dtype=like.dtype, device=device, strides=like.stride()
        )

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise RuntimeError(f"{func}: metadata only")


def _on(value: Any, device_type: str) -> Any:
    if isinstance(value, torch.Tensor) and not isinstance(value, _OnDevice):
        return _OnDevice(value, "privateuseone" if device_type == "privateuseone" else device_type)
    return value
