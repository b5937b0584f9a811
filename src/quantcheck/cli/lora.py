"""`quantcheck lora BASE LORA [LORA...]`: will this LoRA work on this (quantized) model?"""

from __future__ import annotations

import argparse
import json
from typing import Any

DESCRIPTIONS = {
    "lora": (
        "Predict what ComfyUI does with LORA on BASE before a run: which LoRA keys load (its "
        "key map, reproduced from comfy/lora.py) and which it would log as 'lora key not "
        "loaded' with the reason and the nearest base name; whether the shapes fit each "
        "layer's logical [N, K]; per patched layer whether it is re-quantized, run "
        "dequantized or makes the load fail; and, reading the weights (local, or within "
        "--max-bytes), how much of the LoRA survives ComfyUI's re-quantization (its seeded "
        "stochastic rounding, quantcheck's codecs). Without the weights the figures are "
        "estimated from the stored scales; --headers-only skips them."
    )
}


def add_arguments(p: argparse.ArgumentParser, name: str) -> None:
    from quantcheck.cli.options import NO_CAP, add_max_bytes, add_output_format, add_target

    p.add_argument("base", help="the base checkpoint (file, folder, index or URL)")
    p.add_argument("loras", nargs="+", metavar="LORA", help="LoRA safetensors file(s)")
    p.add_argument("--strength", type=float, default=1.0, help="LoRA strength (model), default 1.0")
    add_target(p)
    from quantcheck.cli.options import GPU_HELP, add_gpu

    add_gpu(p, GPU_HELP + "; each patched layer's lora_mode is added to the entry")
    add_output_format(p, ("text", "json", "sarif", "html"))
    p.add_argument(
        "--headers-only",
        action="store_true",
        help="no figures: key matching, shapes and outcomes from the headers alone",
    )
    p.add_argument("--show-all", action="store_true", help="list every unmatched key")
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default="error",
        help="lowest severity that makes the exit code 1 (default: error)",
    )
    add_max_bytes(p, NO_CAP)


def run(args: argparse.Namespace) -> int:
    from quantcheck.cli.gpu import specs_or_usage_error
    from quantcheck.diagnostics import Severity
    from quantcheck.io.limits import parse_byte_count, remote_limits
    from quantcheck.model.discover import one_checkpoint
    from quantcheck.textsafe import say_block

    gpus = specs_or_usage_error(args.gpu)
    with remote_limits(args.max_bytes, None):  # refuses a bad --max-bytes (exit 2)
        cap = parse_byte_count(args.max_bytes) if args.max_bytes else None
        base = one_checkpoint([args.base], "lora", what="reads")
        loras = [one_checkpoint([spec], "lora", what="reads") for spec in args.loras]
        lr = lora_check(
            base,
            loras,
            strength=args.strength,
            target=args.target,
            numbers=not args.headers_only,
            max_bytes=cap,
            gpus=gpus,
        )
    say_block(render(lr, args.output_format, show_all=args.show_all))
    code: int = lr.report.exit_code(Severity(args.fail_on))
    return code


def lora_check(
    base_paths: Any,
    lora_paths: list[Any],
    *,
    strength: float = 1.0,
    target: str = "default",
    numbers: bool = True,
    max_bytes: int | None = None,
    gpus: list[Any] | None = None,
) -> Any:
    """`quantcheck lora BASE LORA...` as a library call (the base and each LoRA: a path, its
    shard paths, or a `CheckpointSpec`)."""
    from quantcheck.checking import select_diagnostics
    from quantcheck.diagnostics import Diagnostic
    from quantcheck.model.checkpoint import load_checkpoint
    from quantcheck.render.lora import LoraReport
    from quantcheck.results import Report
    from quantcheck.rules.lora.run import lora_diagnostics
    from quantcheck.runtimes import targets_of

    targets = targets_of(target)
    gpu: dict[str, Any] = {}
    needs: dict[str, Any] = {}
    with load_checkpoint(base_paths) as base:
        analysis, diags = lora_diagnostics(
            base, lora_paths, strength, numbers=numbers, max_bytes=max_bytes, targets=targets
        )
        if gpus:
            from quantcheck.rules.gpu.report import gpu_targets
            from quantcheck.rules.lora.gpu import fill_lora_modes

            gpu, needs, found = gpu_targets(base, targets, gpus)
            diags.extend(found)
            fill_lora_modes(gpu, analysis)
    diags = select_diagnostics(diags, target=target) if diags else diags
    diags.sort(key=Diagnostic.sort_key)
    inputs = [{"path": analysis.base}] + [{"path": f.path} for f in analysis.files]
    stats = {
        "files": 1 + len(analysis.files),
        "tensors": sum(f.tensors for f in analysis.files),
        "layers": len(analysis.layers),
        "markers": 0,
    }
    report = Report(
        inputs=inputs, diagnostics=diags, targets=targets, stats=stats, gpu=gpu, gpu_needs=needs
    )
    return LoraReport(analysis, report)


def render(lr: object, output_format: str, *, show_all: bool = False) -> str:
    """The LoRA report in one of the command's output formats."""
    from quantcheck.render.lora import LoraReport, document

    assert isinstance(lr, LoraReport)
    if output_format == "json":
        from quantcheck.textsafe import json_safe

        return json_safe(json.dumps(document(lr), indent=2))
    if output_format == "sarif":
        from quantcheck.render.sarif import render as sarif

        return sarif(lr.report)
    if output_format == "html":
        from quantcheck.render.lora import html_page

        return html_page(lr)
    from quantcheck.render.lora import iter_text

    return "\n".join(iter_text(lr, show_all=show_all))
