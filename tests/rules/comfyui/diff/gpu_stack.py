"""The device facts the GPU oracle patches into ComfyUI's and comfy-kitchen's code.

A `Stack` is what their code reads about a machine: the vendor (through `torch.version.cuda`
/ `torch.version.hip` / the XPU, MPS and DirectML probes), the compute capability and the
AMD architecture name (`torch.cuda.get_device_properties`), the torch and CUDA/ROCm versions,
and ComfyUI's command-line switches. Nothing here decides anything: `gpu_oracle.py` hands
these facts to the upstream code and records what it decides.

`stack_from_entry(entry)` builds the stack quantcheck's own JSON entry says it judged (so both
sides judge the same machine). `CARDS` holds the facts of the cards issue 24 names, from
NVIDIA's and AMD's published tables, to check quantcheck's class table against
(test_gpu_stack.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Stack:
    """One machine as the upstream code sees it."""

    vendor: str  # nvidia | amd | intel | apple | directml | cpu
    capability: tuple[int, int] | None = None
    arch: str = ""  # gcnArchName on ROCm
    torch: str = "2.15"  # quantcheck's default (gpus/spec.py DEFAULT_TORCH)
    cuda: str | None = "13.0"
    hip: str | None = None
    #: ComfyUI's `--supports-fp8-compute`
    fp8_flag: bool = False
    #: ComfyUI's `--enable-triton-backend`
    triton: bool = False
    #: ComfyUI's default (DynamicVRAM) loader; False is `--disable-dynamic-vram`
    dynamic_vram: bool = True
    #: the other launch switches, by quantcheck's `flags=` names (gpus/spec.FLAGS)
    flags: frozenset[str] = frozenset()

    def has(self, flag: str) -> bool:
        """Whether the switch `flag` (a `flags=` name) is given, by its field or in `flags`."""
        by_field = {
            "supports-fp8-compute": self.fp8_flag,
            "enable-triton-backend": self.triton,
            "disable-dynamic-vram": not self.dynamic_vram,
        }
        return by_field.get(flag, False) or flag in self.flags

    @property
    def device_type(self) -> str:
        """The `torch.device` type tensors have on this machine."""
        return {
            "nvidia": "cuda",
            "amd": "cuda",
            "intel": "xpu",
            "apple": "mps",
            "directml": "privateuseone",
        }.get(self.vendor, "cpu")


def _nv(major: int, minor: int) -> Stack:
    return Stack("nvidia", (major, minor))


def _amd(arch: str, major: int, minor: int) -> Stack:
    return Stack("amd", (major, minor), arch=arch, cuda=None, hip="7.0")


_OTHER = {"cuda": None, "hip": None}
#: The cards issue 24 names (and a few more), by the names users type.
CARDS: dict[str, Stack] = {
    "rtx2080ti": _nv(7, 5),
    "t4": _nv(7, 5),
    "a100": _nv(8, 0),
    "rtx3090": _nv(8, 6),
    "a6000": _nv(8, 6),
    "rtx4090": _nv(8, 9),
    "l40s": _nv(8, 9),
    "h100": _nv(9, 0),
    "h200": _nv(9, 0),
    "b200": _nv(10, 0),
    "gb200": _nv(10, 0),
    "rtx5090": _nv(12, 0),
    "rx7900xtx": _amd("gfx1100", 11, 0),
    "rx9070xt": _amd("gfx1201", 12, 0),
    "mi300x": _amd("gfx942", 9, 4),
    "mi355x": _amd("gfx950", 9, 5),
    "arc-a770": Stack("intel", **_OTHER),
    "xpu": Stack("intel", **_OTHER),
    "mps": Stack("apple", **_OTHER),
    "directml": Stack("directml", **_OTHER),
    "cpu": Stack("cpu", **_OTHER),
}


def amd_capability(arch: str) -> tuple[int, int]:
    """What ROCm's `get_device_properties` reports as (major, minor) for a gfx name: the digits
    before the last two are the major, the next one the minor (gfx1100 -> 11.0, gfx942 -> 9.4,
    gfx90a -> 9.0)."""
    digits = arch.removeprefix("gfx")
    return int(digits[:-2]), int(digits[-2], 16)


_VENDOR = {"microsoft": "directml"}


def stack_from_entry(entry: dict[str, Any]) -> Stack:
    """The stack quantcheck's `targets[T].gpu[G]` entry says it judged: vendor, compute
    capability or AMD architecture, torch, CUDA, ROCm, the launch switches."""
    vendor = _VENDOR.get(entry["vendor"], entry["vendor"])
    cc = entry.get("compute_capability")
    arch = entry.get("arch") or ""
    capability = None
    if cc:
        major, _, minor = str(cc).partition(".")
        capability = (int(major), int(minor or 0))
    elif arch:
        capability = amd_capability(arch)
    return Stack(
        vendor,
        capability,
        arch=arch,
        torch=str(entry.get("torch") or "2.15"),
        cuda=str(entry["cuda"]) if entry.get("cuda") else None,
        hip=str(entry["rocm"]) if entry.get("rocm") else None,
        flags=frozenset(entry.get("flags") or ()),
    )
