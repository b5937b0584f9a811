"""`--gpu SPEC`: a device and its software stack.

    SPEC    = DEVICE [ "," KEY "=" VALUE ]...  |  "all" [ "," ... ]
    DEVICE  = a card name (rtx4090, a100, l40s, h100, b200, rx7900xtx, mi300x, arc-a770, m2)
            | a compute capability (sm_89, sm_100, 8.9, 12.0)
            | an AMD architecture (gfx1100, gfx942)
            | a backend (xpu, directml, mps, cpu)
    KEY     = torch (2.9), cuda (12.8; NVIDIA), rocm (6.4; AMD), os (linux, windows),
              flags (switches joined by "+": flags=supports-fp8-compute+disable-dynamic-vram)

Defaults: torch 2.15 (the newest stable release), CUDA 13.0 (12.6 for classes CUDA 13 dropped),
ROCm 7.1, Linux, no switches. `flags=` names the runtime's launch switches that change how
quantized layers run (`FLAGS`, ComfyUI's names; each runtime's GPU rules read the ones it has
and say which they ignore). `all` stands for every class of the table with the same stack.
`auto` (the local device) is read by the CLI with torch and handed here as a concrete spec.
"""

from __future__ import annotations

from quantcheck._record import record
from quantcheck.gpus.classes import CLASSES, GpuClass, card, class_by_key, class_of

#: torch's newest stable release (PyPI, 2026-12) and the defaults of the other stack parts
DEFAULT_TORCH = (2, 15)
DEFAULT_CUDA = (13, 0)
DEFAULT_ROCM = (7, 1)
BACKENDS = ("xpu", "directml", "mps", "cpu")
KEYS = ("torch", "cuda", "rocm", "os", "flags")
#: The switches `flags=` accepts (ComfyUI @783545f6 comfy/cli_args.py launch switches without
#: the leading `--`, and SD.Next's one setting that decides its verdicts), with what each
#: changes for quantized layers. `--fast` is not one: ComfyUI's
#: pick_operations returns the mixed-precision ops before it reads `args.fast`.
FLAGS = {
    "supports-fp8-compute": "ComfyUI acts as if the device had FP8 compute (opens the FP8 gate)",
    "enable-triton-backend": "comfy-kitchen's Triton backend on (ComfyUI's default: off)",
    "disable-triton-backend": "comfy-kitchen's Triton backend off (wins over enable)",
    "disable-dynamic-vram": "the estimate-based loader instead of DynamicVRAM",
    "enable-dynamic-vram": "DynamicVRAM also where it is not the default (wins over the "
    "switches that turn it off)",
    "highvram": "keeps models in VRAM; turns DynamicVRAM off",
    "gpu-only": "everything on the GPU; turns DynamicVRAM off",
    "novram": "offloads everything; turns DynamicVRAM off",
    "sdnq-quantized-matmul": "SD.Next's setting Quantized MatMul on (sdnq_quantize_matmul_mode; "
    "default disabled)",
}
#: the names of `FLAGS` that are settings, not launch switches (shown without `--`)
SETTINGS = frozenset({"sdnq-quantized-matmul"})


def switch_text(flag: str) -> str:
    """`--supports-fp8-compute`, `sdnq-quantized-matmul` (a setting)."""
    return flag if flag in SETTINGS else f"--{flag}"


class SpecError(ValueError):
    """A `--gpu` value that names no device or has a bad stack part (the message says which
    and what is accepted)."""


@record
class GpuSpec:
    """One resolved `--gpu` value. `given` is the value as typed (the JSON key); `device` the
    name it resolved to (a card name, `sm_89`, a backend)."""

    given: str
    device: str
    cls: GpuClass
    cc: tuple[int, int] | None
    arch: str | None
    torch: tuple[int, int]
    cuda: tuple[int, int] | None
    rocm: tuple[int, int] | None
    os: str = "linux"
    memory_gib: int | None = None
    #: launch switches (`FLAGS` names)
    flags: frozenset[str] = frozenset()

    @property
    def vendor(self) -> str:
        return self.cls.vendor

    @property
    def backend(self) -> str:
        return self.cls.backend

    @property
    def where(self) -> str:
        """`sm_89`, `gfx1100` or the backend: what the device gates read."""
        if self.cc is not None:
            return f"sm_{self.cc[0]}{self.cc[1]}"
        return self.arch or self.backend

    def label(self) -> str:
        """`rtx4090 (sm_89)`, `sm_89`, `mi300x (gfx942)`, `mps`."""
        return self.device if self.device == self.where else f"{self.device} ({self.where})"

    def stack(self) -> str:
        """`torch 2.15, CUDA 13.0` (what the stack part of the spec resolved to)."""
        parts = [f"torch {_v(self.torch)}"]
        if self.cuda is not None:
            parts.append(f"CUDA {_v(self.cuda)}")
        if self.rocm is not None:
            parts.append(f"ROCm {_v(self.rocm)}")
        if self.os != "linux":
            parts.append(self.os.capitalize())
        parts += [switch_text(f) for f in sorted(self.flags)]
        return ", ".join(parts)

    def switches(self) -> str:
        """` with --supports-fp8-compute` (what the summary line adds), or ``."""
        return f" with {' '.join(map(switch_text, sorted(self.flags)))}" if self.flags else ""

    def head_json(self) -> dict[str, object]:
        """The device keys of a `targets[T].gpu[G]` entry."""
        return {
            "spec": self.given,
            "device": self.device,
            "class": self.cls.key,
            "title": self.cls.title,
            "vendor": self.vendor,
            "backend": self.backend,
            "compute_capability": _v(self.cc) if self.cc is not None else None,
            "arch": self.arch,
            "torch": _v(self.torch),
            "cuda": _v(self.cuda) if self.cuda is not None else None,
            "rocm": _v(self.rocm) if self.rocm is not None else None,
            "os": self.os,
            "flags": sorted(self.flags),
            "memory_gib": self.memory_gib,
        }


def _v(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def _version(key: str, text: str) -> tuple[int, int]:
    """`2.9`, `2.9.1`, `12.8` -> (major, minor); SpecError otherwise."""
    parts = text.strip().split(".")
    if len(parts) < 2 and parts[0].isdigit() and key == "torch":
        parts.append("0")
    if len(parts) < 2 or not all(p.isdigit() and len(p) <= 4 for p in parts[:2]):
        raise SpecError(f"{key}={text!r}: give a version such as {_EXAMPLE[key]}")
    return int(parts[0]), int(parts[1])


_EXAMPLE = {"torch": "2.9", "cuda": "12.8", "rocm": "6.4"}


def _capability(text: str) -> tuple[int, int] | None:
    """`sm_89`, `sm89`, `sm_100`, `8.9`, `12.0` -> (major, minor); None when it is none."""
    t = text.lower()
    if t.startswith("sm"):
        digits = t[2:].lstrip("_")
        if digits.isdigit() and len(digits) in (2, 3):
            return int(digits[:-1]), int(digits[-1])
        return None
    major, dot, minor = t.partition(".")
    if dot and major.isdigit() and minor.isdigit() and len(major) <= 2 and len(minor) == 1:
        return int(major), int(minor)
    return None


def _device(text: str) -> tuple[str, GpuClass, tuple[int, int] | None, str | None, int | None]:
    """(device name, class, compute capability, AMD arch, VRAM GiB) of the DEVICE part."""
    t = text.strip().lower()
    if t in BACKENDS:
        cls = class_by_key(t)
        assert cls is not None
        return t, cls, None, None, None
    cc = _capability(t)
    if cc is not None:
        if not 3 <= cc[0] <= 15:
            raise SpecError(f"{text!r}: no NVIDIA GPU has compute capability {_v(cc)}")
        cls = class_of(cc)
        name = f"sm_{cc[0]}{cc[1]}" if t.startswith("sm") else _v(cc)
        return name, cls, cc, None, None
    if t.startswith("gfx") and len(t) >= 6 and all(ch in "0123456789abcdef" for ch in t[3:]):
        known = class_by_key(t)
        cls = known or GpuClass(t, f"AMD {t}", "amd", "rocm", arch=t)
        return t, cls, None, t, None
    hit = card(t)
    if hit is not None:
        cls, name, gib = hit
        return name, cls, cls.cc, cls.arch, gib
    raise SpecError(f"{text!r} names no GPU{_nearest(t)}; {GRAMMAR_HINT}")


GRAMMAR_HINT = (
    "give a card (rtx4090, a100, mi300x, arc-a770), a compute capability (sm_89, 8.9), an AMD "
    "architecture (gfx1100), a backend (xpu, directml, mps, cpu), all, or auto; "
    "optionally followed by ,torch=2.9 ,cuda=12.8 ,rocm=6.4 ,os=windows "
    ",flags=supports-fp8-compute+disable-dynamic-vram"
)


def _nearest(text: str) -> str:
    import difflib

    from quantcheck.gpus.classes import card_names

    names = [*card_names(), *(c.key for c in CLASSES)]
    near = difflib.get_close_matches(text, names, n=1, cutoff=0.6)
    return f" (did you mean {near[0]}?)" if near else ""


def parse_spec(value: str, *, given: str | None = None) -> GpuSpec:
    """One `--gpu` value (not `all`) as a GpuSpec; `given` replaces the JSON key (`auto`)."""
    device, *stack = value.split(",")
    if not device.strip():
        raise SpecError(f"{value!r}: no device; {GRAMMAR_HINT}")
    name, cls, cc, arch, gib = _device(device)
    torch = DEFAULT_TORCH
    cuda = cls.default_cuda if cls.vendor == "nvidia" else None
    rocm = DEFAULT_ROCM if cls.vendor == "amd" else None
    os = "linux"
    flags: frozenset[str] = frozenset()
    seen: set[str] = set()
    for part in stack:
        key, eq, text = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in KEYS:
            raise SpecError(f"{value!r}: {part.strip()!r} is not KEY=VALUE with KEY one of {KEYS}")
        if key in seen:
            raise SpecError(f"{value!r}: {key}= given twice")
        seen.add(key)
        if key == "torch":
            text, plus, build = text.partition("+")
            torch = _version(key, text)
            if plus and build.startswith("cu") and build[2:].isdigit() and len(build) >= 5:
                cuda = (int(build[2:-1]), int(build[-1]))
        elif key == "cuda":
            if cls.vendor != "nvidia":
                raise SpecError(f"{value!r}: cuda= applies to NVIDIA GPUs only")
            cuda = _version(key, text)
        elif key == "rocm":
            if cls.vendor != "amd":
                raise SpecError(f"{value!r}: rocm= applies to AMD GPUs only")
            rocm = _version(key, text)
        elif key == "flags":
            flags = _flags(value, text)
        else:
            os = text.strip().lower()
            if os not in ("linux", "windows"):
                raise SpecError(f"{value!r}: os= is linux or windows")
    return GpuSpec(
        given if given is not None else value.strip(),
        name,
        cls,
        cc,
        arch,
        torch,
        cuda,
        rocm,
        os=os,
        memory_gib=gib,
        flags=flags,
    )


def _flags(value: str, text: str) -> frozenset[str]:
    """`supports-fp8-compute+--disable-dynamic-vram` -> their `FLAGS` names; SpecError naming an
    unknown one and the accepted ones."""
    out = set()
    for part in text.split("+"):
        name = part.strip().lower().lstrip("-").replace("_", "-")
        if not name:
            continue
        if name not in FLAGS:
            raise SpecError(
                f"{value!r}: flags= does not know {part.strip()!r}; accepted: {', '.join(FLAGS)}"
            )
        out.add(name)
    return frozenset(out)


def _applies(part: str, cls: GpuClass) -> bool:
    """Whether a stack part of `all,...` applies to class `cls` (cuda= to NVIDIA, rocm= to
    AMD; the others to every class)."""
    key = part.partition("=")[0].strip().lower()
    return {"cuda": cls.vendor == "nvidia", "rocm": cls.vendor == "amd"}.get(key, True)


def expand_specs(values: list[str]) -> list[GpuSpec]:
    """Every `--gpu` value parsed, `all[,STACK]` as each class of the table with that stack
    (its JSON key `sm_89[,STACK]`); a key given twice counts once. SpecError on a bad one."""
    out: dict[str, GpuSpec] = {}
    for value in values:
        device, comma, stack = value.strip().partition(",")
        if device.strip().lower() == "all":
            parts = [p for p in stack.split(",") if p.strip()] if comma else []
            for cls in CLASSES:
                own = [p for p in parts if _applies(p, cls)]
                key = ",".join([cls.key, *own])
                out.setdefault(key, parse_spec(key))
        else:
            spec = parse_spec(value)
            out.setdefault(spec.given, spec)
    return list(out.values())
