"""`--gpu SPEC` of `check`, `report` and `quantize`: the specs it names (`all` expanded, `auto`
read from the local device with torch), and `quantize`'s use of them. The option itself is
`cli/options.add_gpu` (a check without `--gpu` never imports this module). Standard library
only unless `auto` is given."""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable

    from quantcheck.gpus.spec import GpuSpec


def resolve(values: list[str]) -> list[GpuSpec]:
    """The specs `values` name; ValueError (a usage error) naming a bad one."""
    from quantcheck.gpus.spec import expand_specs, parse_spec

    out: list[GpuSpec] = []
    plain: list[str] = []
    for value in values:
        device = value.split(",")[0].strip().lower()
        if device == "auto":
            out.append(parse_spec(local_spec(value), given=value.strip()))
        else:
            plain.append(value)
    return [*out, *expand_specs(plain)]


def specs_or_usage_error(values: list[str]) -> list[GpuSpec] | None:
    """`resolve(values)` (None for no --gpu); a bad value is a usage error (InputError,
    exit 2) naming it."""
    if not values:
        return None
    from quantcheck.errors import InputError

    try:
        return resolve(values)
    except ValueError as exc:
        raise InputError(f"--gpu: {exc}") from None


def local_spec(value: str) -> str:
    """`auto[,STACK]` as a concrete spec of this machine's first device, read with torch:
    `sm_89,torch=2.9,cuda=12.8`, `gfx1100,torch=2.9,rocm=6.4`, `mps,torch=2.9`, `xpu`, `cpu`.
    A stack given after `auto` wins. ValueError when torch is not installed."""
    try:
        import torch
    except ImportError:
        raise ValueError(
            "--gpu auto reads the local device with torch, which is not installed; name the "
            "GPU instead (e.g. --gpu rtx4090 or --gpu sm_89,cuda=12.8)"
        ) from None
    version = ".".join(str(torch.__version__).split("+")[0].split(".")[:2])
    parts = [f"torch={version}"]
    if torch.cuda.is_available():
        hip = getattr(torch.version, "hip", None)
        if hip:
            arch = torch.cuda.get_device_properties(0).gcnArchName.split(":")[0]
            device = arch
            parts.append("rocm=" + ".".join(str(hip).split(".")[:2]))
        else:
            major, minor = torch.cuda.get_device_capability(0)
            device = f"sm_{major}{minor}"
            if torch.version.cuda:
                parts.append("cuda=" + ".".join(str(torch.version.cuda).split(".")[:2]))
    elif getattr(torch, "xpu", None) is not None and torch.xpu.is_available():
        device = "xpu"
    elif torch.backends.mps.is_available():
        device = "mps"
    else:
        device = "cpu"
    given = [p.strip() for p in value.split(",")[1:] if p.strip()]
    keys = {p.partition("=")[0].strip().lower() for p in given}
    parts = [p for p in parts if p.partition("=")[0] not in keys] + given
    return ",".join([device, *parts])


def pick_format(
    specs: list[GpuSpec],
    keys: tuple[str, ...],
    writable: tuple[str, ...],
    loads: Callable[[str], bool] | None = None,
) -> str:
    """`quantize --to auto --gpu SPEC`: the first of the "runs natively instead" formats
    (`rules/gpu/needs.ALTERNATIVES`) that `quantize` can write, that runs natively on every
    given GPU for every target key with GPU decisions and that `loads` (fmt -> whether the
    targets load it; None: not asked) accepts; ValueError naming why none does."""
    from quantcheck.rules.gpu.needs import ALTERNATIVES
    from quantcheck.rules.gpu.report import gpu_rules

    rules = [r for k in keys if (r := gpu_rules(k)) is not None]
    if not rules:
        raise ValueError("--to auto needs a --target whose runtime models GPUs (comfyui, sglang)")
    for fmt in ALTERNATIVES:
        if (
            fmt in writable
            and all(r.format_decision(fmt, s)[0] == "native" for r in rules for s in specs)
            and (loads is None or loads(fmt))
        ):
            return fmt
    raise ValueError(
        "--to auto: no format quantize writes runs natively on "
        f"{', '.join(s.label() for s in specs)} and loads on {', '.join(keys)}; name one with "
        "--to"
    )


def planned_lines(ck: object, keys: tuple[str, ...], specs: list[GpuSpec]) -> list[str]:
    """`quantize --gpu`: the GPU summary of the file as it would be written (one line per
    target and GPU), a `warning:` line for each GPU where some layers would not be native."""
    from quantcheck.rules.gpu.report import gpu_targets

    per_target, needs, _ = gpu_targets(ck, keys, specs)  # type: ignore[arg-type]
    out = []
    for key, entries in per_target.items():
        for e in entries.values():
            out.append(e["summary"])
        out += [f"warning: {a}" for a in needs[key]["advice_lines"]]
    return out
