"""`quantcheck quantize` and `quantcheck dequantize`: convert a checkpoint layer by layer.

Both stream: each layer is converted when the writer reaches it and freed after its last
tensor is written; every other tensor is copied byte for byte.
"""

from __future__ import annotations

import argparse
from typing import Any

from quantcheck.cli.options import target_value
from quantcheck.formats.table import FORMATS
from quantcheck.textsafe import say, say_error, say_warning


def quant_formats() -> tuple[str, ...]:
    """Formats `quantize --to` offers: every table entry that declares a quantizer."""
    return tuple(n for n, f in FORMATS.items() if f.quantizable)


_W4A8 = {o.name: o for o in FORMATS["asym_w4a8_int8"].options}
_W4A4 = {o.name: o for o in FORMATS["convrot_w4a4"].options}
DESCRIPTIONS = {
    "quantize": (
        "Quantize the Linear weights of a BF16/F16/F32 checkpoint to one Comfy format and write "
        "the comfy_quant markers. By default norms, biases, embeddings and 1-D tensors are left "
        "alone, and so is every layer whose shape the format cannot take on --target (each is "
        "reported). One layer is in memory at a time."
    ),
    "dequantize": (
        "Dequantize every marked layer back to a plain weight (--dtype, default bf16) and drop "
        "the markers; other tensors are copied byte for byte."
    ),
}


class DeprecatedTo(argparse.Action):
    """`quantize --format F`: the pre-0.2 spelling of `--to F`; works, with a warning."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        say_warning(f"quantize --format is deprecated and will be removed; use --to {values}")
        setattr(namespace, self.dest, values)


def add_arguments(p: argparse.ArgumentParser, name: str) -> None:
    from quantcheck.cli.options import NO_CAP, add_as_one, add_max_bytes

    p.add_argument("paths", nargs="+", metavar="IN", help="checkpoint file, folder or index")
    add_as_one(p)
    add_max_bytes(p, NO_CAP)
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        required=True,
        help="output file (a folder for sharded input)",
    )
    if name == "dequantize":
        p.add_argument("--dtype", choices=("bf16", "f16", "f32"), default="bf16")
        return
    to = p.add_mutually_exclusive_group(required=True)
    formats = quant_formats()
    to.add_argument(
        "--to",
        choices=(*formats, "auto"),
        dest="fmt",
        metavar="FORMAT",
        help=f"target format: {', '.join(formats)}; auto (with --gpu): the first of "
        "float8_e4m3fn, int8_tensorwise, mxfp8, nvfp4, asym_w4a8_int8 that runs natively on "
        "every --gpu for --target",
    )
    to.add_argument(
        "--format", choices=formats, dest="fmt", action=DeprecatedTo, help=argparse.SUPPRESS
    )
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="GLOB",
        help="only layers whose prefix (or weight name) matches; repeatable. "
        "Overrides the default skip of norm/embedding names",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out matching layers; repeatable",
    )
    p.add_argument(
        "--target",
        type=target_value,
        default="default",
        metavar="TARGET",
        help="runtime(s) the result must load on, as for check: default, NAME, NAME@RELEASE "
        "(e.g. sglang@0.5.19), NAME@all, all, all@all or a comma-separated list; a format a "
        "target cannot load is refused, layers it cannot take stay unquantized, marker fields "
        "a release needs are written, and the file written checks clean for each (default: "
        "default, as for check: sglang and comfyui)",
    )
    p.add_argument(
        "--no-convrot",
        action="store_true",
        help="int8_tensorwise: plain row-wise scales instead of ConvRot",
    )
    p.add_argument(
        "--per-tensor",
        action="store_true",
        help="int8_tensorwise: one scalar scale (implies --no-convrot)",
    )
    cg, g, bits = _W4A8["convrot_groupsize"], _W4A8["group_size"], _W4A8["bits"]
    p.add_argument(
        "--convrot-groupsize",
        type=int,
        default=cg.default,
        choices=cg.allowed,
        help="Hadamard rotation group for int8_tensorwise ConvRot, convrot_w4a4 and "
        f"asym_w4a8_int8 (default {cg.default})",
    )
    p.add_argument(
        "--group-size",
        type=w4a8_group_size,
        default=g.default,
        metavar="N",
        help=f"asym_w4a8_int8 group: 4, 8, 16 or a multiple of 16 (default {g.default})",
    )
    p.add_argument(
        "--bits", type=int, default=bits.default, choices=bits.allowed, help="asym_w4a8_int8 bits"
    )
    p.add_argument("--no-codebook", action="store_true", help="asym_w4a8_int8: uniform levels")
    p.add_argument(
        "--asymmetric",
        action="store_true",
        help="asym_w4a8_int8: min/max groups with a correction tensor",
    )
    sd = _W4A8["scale_dtype"]
    p.add_argument(
        "--scale-dtype", choices=sd.allowed, default=sd.default, help="asym_w4a8_int8 s_rel dtype"
    )
    p.add_argument(
        "--linear-dtype",
        choices=[v for v in _W4A4["linear_dtype"].allowed or () if v is not None],
        help="convrot_w4a4 GEMM",
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    from quantcheck.cli.options import add_gpu

    add_gpu(
        p,
        "say how the written file runs on this GPU (per target: layers native / emulated, "
        "weight memory) and warn when some layers would be emulated there; with --to auto, "
        "pick a format that runs natively. SPEC as for `check --gpu`. Repeatable",
    )
    from quantcheck.convert.family import AUTO, CHOICES

    p.add_argument(
        "--family",
        choices=CHOICES,
        default=AUTO,
        metavar="FAMILY",
        help="keep the model family's high-precision layers in their dtype (what its "
        "producers keep, and the layers ComfyUI's detection reads when the format packs K): "
        f"auto (detect it; the default), none, or one of {', '.join(CHOICES[2:])}",
    )
    p.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="PATTERN",
        help="also keep matching layers in their dtype (a glob over the layer prefix or "
        "weight name, or a plain part of the name); repeatable",
    )
    p.add_argument(
        "--quantize",
        action="append",
        default=[],
        metavar="PATTERN",
        dest="force",
        help="quantize matching layers even though the family keeps them; repeatable",
    )


def w4a8_group_size(text: str) -> int:
    """`--group-size`: what W4A8 groups can be (>= 4 dividing 16, or a multiple of 16); any
    other value is a usage error (exit 2) before anything is read."""
    try:
        g = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if g not in (4, 8, 16) and (g <= 0 or g % 16 or g > 2**20):
        raise argparse.ArgumentTypeError(
            f"{g} is not a W4A8 group size (4, 8, 16 or a multiple of 16)"
        )
    return g


def options_of(args: argparse.Namespace) -> dict[str, Any]:
    """Quantizer options for the chosen format: the flags of the options its table entry takes."""
    given = {
        "per_row": not args.per_tensor,
        "convrot": not (args.no_convrot or args.per_tensor),
        "convrot_groupsize": args.convrot_groupsize,
        "group_size": args.group_size,
        "codebook": not args.no_codebook,
        "symmetric": not args.asymmetric,
        "bits": args.bits,
        "scale_dtype": args.scale_dtype,
        "linear_dtype": args.linear_dtype,
    }
    return {o.name: given[o.name] for o in FORMATS[args.fmt].options}


def run(args: argparse.Namespace) -> int:
    from quantcheck.io.limits import remote_limits

    with remote_limits(args.max_bytes, None):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.model.discover import one_checkpoint

    spec = one_checkpoint(args.paths, args.command, as_one=args.as_one)
    with load_checkpoint(spec) as ck:
        from quantcheck.fix.planner import unrepairable

        bad = unrepairable(ck)
        if bad:
            say_error(f"cannot convert: {bad[0].code} {bad[0].message}")
            return 2
        from quantcheck.cli.output import output_layout

        out, index = output_layout(ck, args.output)
        if args.command == "quantize":
            return _quantize(ck, args, out, index)
        return _dequantize(ck, args, out, index)


def _quantize(ck: Any, args: argparse.Namespace, out: str, index: str | None) -> int:
    from quantcheck.convert.family import family_keeps
    from quantcheck.convert.plan import ALREADY, plan_quantize

    specs = _gpu_specs(args, ck)
    if isinstance(specs, str):
        say_error(specs)
        return 2
    options = options_of(args)
    fam, family_kept = family_keeps(ck, args.family, args.fmt, args.keep, args.force)
    planned = _judge_targets(ck, args, options, family_kept)
    if isinstance(planned, str):
        say_error(f"{planned} (choose another --target or format)")
        return 2
    kept: dict[str, str] = {**family_kept, **planned}
    refused: dict[str, str] = {}
    while True:
        draft, done, skipped = plan_quantize(
            ck, args.fmt, options, args.target, args.include, args.exclude, {**kept, **refused}
        )
        if args.dry_run:
            break
        rc, bad = _write(ck, draft, out, index, args.target, "quantize", retry=True)
        if bad is None or bad[0] in refused or len(refused) >= MAX_REFUSED:
            break
        refused[bad[0]] = f"left as it is: the quantizer refused it ({bad[1]})"
        say(
            f"  {bad[0]}: {bad[1]} -> keeping this layer as it is and writing again",
            err=True,
        )
    say(f"quantize: {len(done)} layer{'s' if len(done) != 1 else ''} -> {args.fmt}")
    _say_family(fam, {p: r for p, r in skipped.items() if p in family_kept})
    shape_skips = {
        p: r
        for p, r in skipped.items()
        if p not in family_kept and ("K=" in r or "sglang" in r or p in refused or p in kept)
    }
    for p, r in shape_skips.items():
        say(f"  skipped {p}: {r}")
    marked = sum(r == ALREADY for r in skipped.values())
    if marked:
        say(
            f"  {marked} layer{'s were' if marked != 1 else ' was'} already quantized (a "
            "marker) and left as they are"
        )
    other = len(skipped) - len(shape_skips) - marked - len(family_kept.keys() & skipped.keys())
    if other:
        say(
            f"  {other} other layer{'s' if other != 1 else ''} left as they are (norms, "
            "embeddings, biases, non-2-D or non-float weights, --include/--exclude)"
        )
    if done:
        from quantcheck.convert.plan import planned as planned_ck
        from quantcheck.convert.plan import unloading
        from quantcheck.runtimes import targets_of

        for line in unloading(planned_ck(draft), targets_of(args.target)):
            say(f"  not loaded by {line}")
    if specs:
        from quantcheck.cli.gpu import planned_lines
        from quantcheck.convert.plan import planned
        from quantcheck.runtimes import targets_of

        for line in planned_lines(planned(draft), targets_of(args.target), specs):
            say(f"  {line}")
    if args.dry_run:
        return 0
    if rc == 0 and not done:
        say(f"wrote {out}: a copy, no layer was quantized")
    elif rc == 0:
        say(f"wrote {out}")
    return rc or (1 if refused else 0)


def _say_family(fam: Any, kept: dict[str, str]) -> None:
    """Which layers `--family` (and `--keep`) kept in their dtype, and why."""
    name = fam.title if fam is not None else "no family"
    if not kept:
        if fam is not None:
            say(f"  family {fam.name} ({name}): no layer of its high-precision list to keep")
        return
    say(f"  kept {len(kept)} layer{'s' if len(kept) != 1 else ''} in their dtype ({name}):")
    for p, r in kept.items():
        say(f"    {p}: {r.removeprefix('kept: ')}")


def _gpu_specs(args: argparse.Namespace, ck: Any) -> Any:
    """`--gpu`'s specs (None without it), with `--to auto` replaced by the format it picks
    (said on stderr): native on the GPUs and loaded by every target, as `_judge_targets`
    judges a format on a probe layer of `ck`'s model family; a str says why the run cannot go
    on."""
    from quantcheck.cli.gpu import pick_format, resolve
    from quantcheck.runtimes import targets_of

    if not args.gpu:
        return (
            "--to auto needs --gpu (the GPU to pick a native format for)"
            if (args.fmt == "auto")
            else None
        )
    try:
        specs = resolve(args.gpu)
        if args.fmt == "auto":
            keys = targets_of(args.target)
            args.fmt = pick_format(specs, keys, quant_formats(), _loads_on(ck, args, keys))
            say(f"--to auto: {args.fmt} runs natively on {', '.join(s.label() for s in specs)}")
    except ValueError as exc:
        return f"--gpu: {exc}" if not str(exc).startswith("--to") else str(exc)
    return specs


def _loads_on(ck: Any, args: argparse.Namespace, keys: tuple[str, ...]) -> Any:
    """fmt -> whether every target key loads a layer `quantize --to fmt` would write (with the
    options given) in a checkpoint of `ck`'s model family: `_judge_targets`'s first test."""
    from quantcheck.checking import decision_family
    from quantcheck.convert.eligible import format_refusal
    from quantcheck.convert.plan import PROBE_LAYER, probe_finding

    family = decision_family(ck, keys)

    def loads(fmt: str) -> bool:
        opts = options_of(argparse.Namespace(**{**vars(args), "fmt": fmt}))
        return all(
            not format_refusal(fmt, opts, k)
            and probe_finding(fmt, opts, k, PROBE_LAYER, family) is None
            for k in keys
        )

    return loads


def _judge_targets(
    ck: Any, args: argparse.Namespace, options: dict[str, Any], family_kept: dict[str, str]
) -> Any:
    """Before anything is written: the reason (a str) a target cannot load what `quantize`
    would write, or the layers to leave as they are (prefix -> why) so that the file checks
    clean for every target key. The format is judged on a probe layer, then the planned
    checkpoint's header is checked with the target's rules (what the input already had does
    not count); a layer a target cannot take is kept, anything else refuses the run."""
    from quantcheck.checking import decision_family, run_rules, select_diagnostics
    from quantcheck.convert.eligible import format_refusal
    from quantcheck.convert.plan import (
        PROBE_LAYER,
        harms,
        new_findings,
        plan_quantize,
        planned,
        probe_finding,
        release_name,
        spared,
    )
    from quantcheck.rules import codes as R
    from quantcheck.runtimes import targets_of

    keys = targets_of(args.target)
    _, done, _ = plan_quantize(ck, args.fmt, options, args.target, args.include, args.exclude)
    family = decision_family(ck, keys)  # the loader that decides is the one for its family
    for key in keys:
        why = format_refusal(args.fmt, options, key)
        if why:
            return f"{args.fmt} cannot load on {release_name(key)}: {why}"
        probe = done[0] if done else PROBE_LAYER
        d = probe_finding(args.fmt, options, key, probe, family)
        if d is not None:
            return f"{args.fmt} cannot load on {release_name(key)}: {d.code} {d.message}"
    before = select_diagnostics(run_rules(ck, keys), target=args.target)
    kept: dict[str, str] = {}
    for _ in range(MAX_ROUNDS):
        draft, done, _ = plan_quantize(
            ck, args.fmt, options, args.target, args.include, args.exclude, {**family_kept, **kept}
        )
        ck_after = planned(draft)
        after = select_diagnostics(run_rules(ck_after, keys), target=args.target)
        # the family's quality list is --family's to decide (QC861 is a warning of taste)
        found = [
            d
            for d in new_findings(before, spared(after, ck_after, keys, family), keys)
            if d.code != R.QC861.code
        ]
        if not found:
            return kept
        for d in found:
            key = next(k for k in keys if harms(d, k))
            why = f"{release_name(key)}: {d.code} {d.message}"
            if d.layer not in done:
                return f"{args.fmt} cannot load on {why}"
            kept[d.layer] = f"left as it is: {why}"
        if all(p in kept for p in done):
            return f"{args.fmt} cannot load on {why} (on every layer it would quantize)"
    return f"{args.fmt}: no plan loads on {args.target} after {MAX_ROUNDS} rounds"


MAX_ROUNDS = 4  # plans `quantize` checks against its targets before it gives up


def _dequantize(ck: Any, args: argparse.Namespace, out: str, index: str | None) -> int:
    from quantcheck.convert.eligible import FLOAT_WEIGHTS
    from quantcheck.convert.layer import dequantize_layer
    from quantcheck.fix.actions import Refused, logical_shape, replace_layer
    from quantcheck.fix.draft import QMETA, Draft

    draft = Draft.of(ck)
    failed: dict[str, str] = {}
    n = 0
    for prefix in ck.markers:
        layer = ck.layers.get(prefix)
        if layer is None or layer.weight is None:
            draft.set_marker(prefix, None)
            continue
        if layer.weight.dtype in FLOAT_WEIGHTS:
            draft.set_marker(prefix, None)
            continue
        try:
            fmt, fields, shape, edges = logical_shape(draft, prefix)
        except Refused as exc:
            failed[prefix] = str(exc)
            continue
        lazy = dequantize_layer(_tensors(draft, layer), fmt, fields, shape, args.dtype, edges)
        lazy.name = prefix
        replace_layer(draft, prefix, lazy, None)
        n += 1
    if not failed:
        for f in draft.files:
            f.metadata.pop(QMETA, None)
    say(f"dequantize: {n} layer{'s' if n != 1 else ''} -> {args.dtype}")
    for p, r in failed.items():
        say(f"  left quantized {p}: {r}")
    rc = _write(ck, draft, out, index, "all", "dequantize")
    return rc or (1 if failed else 0)


def _tensors(draft: Any, layer: Any) -> dict[str, Any]:
    out = {}
    for s, t in layer.tensors.items():
        if s not in ("bias", "comfy_quant"):
            cur = draft.get(t.name)
            out[s] = (cur.dtype, cur.shape, cur.data)
    return out


MAX_REFUSED = 32  # layers a quantize run may leave unquantized before it gives up


def _write(
    ck: Any, draft: Any, out: str, index: str | None, target: str, label: str, retry: bool = False
) -> Any:
    """Write the draft. With `retry`, returns (exit code, (layer, reason) or None) so that a
    layer the quantizer refuses can be left out and the write repeated."""
    from quantcheck.cli.output import index_metadata, name_files
    from quantcheck.model.written import write_checkpoint
    from quantcheck.numeric import NumericError
    from quantcheck.progress import Progress

    files = name_files(ck, draft.files_out())
    bar = Progress(sum(f.data_size for f in files), label, unit="bytes")
    try:
        write_checkpoint(files, out, index_name=index, index_meta=index_metadata(ck), on_bytes=bar)
    except NumericError as exc:
        bar.close()
        layer = getattr(exc, "layer", "")
        if retry and layer:
            return 2, (layer, str(exc).removeprefix(f"{layer}: "))
        say(err=True)
        say_error(f"{exc}; nothing was written")
        return (2, None) if retry else 2
    bar.close()
    if retry:
        return 0, None
    say(f"wrote {out}")
    return 0
