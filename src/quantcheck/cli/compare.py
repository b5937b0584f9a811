"""`quantcheck compare QUANTIZED ORIGINAL`: per-layer error, worst first."""

from __future__ import annotations

import argparse
import json

from quantcheck.textsafe import say_block

DESCRIPTIONS = {
    "compare": (
        "Dequantize every layer of QUANTIZED and compare it with the same weight in ORIGINAL: "
        "max-abs error, relative L2, cosine similarity and SNR (dB), worst first. Layers are read "
        "and dequantized in row chunks on all cores (QUANTCHECK_THREADS), so memory stays at a few "
        "chunks; the results do not depend on the thread count. Biases are compared and reported "
        "but never count as failures."
    )
}


def add_arguments(p: argparse.ArgumentParser, name: str) -> None:
    p.add_argument("quantized", help="quantized checkpoint (file, folder, index or URL)")
    p.add_argument("original", help="the unquantized original it was made from")
    from quantcheck.cli.options import add_output_format

    add_output_format(p, ("text", "json"))
    p.add_argument("--top", type=int, default=30, help="rows in the text table (default 30)")
    p.add_argument("--all", action="store_true", help="every layer in the text table")
    from quantcheck.cli.options import NO_CAP, add_max_bytes

    add_max_bytes(p, NO_CAP)


def run(args: argparse.Namespace) -> int:
    from quantcheck.io.limits import remote_limits
    from quantcheck.model.discover import one_checkpoint
    from quantcheck.numeric.compare import compare_checkpoints, render_table

    with remote_limits(args.max_bytes, None):
        quantized = one_checkpoint([args.quantized], "compare", what="reads")
        result = compare_checkpoints(
            quantized, one_checkpoint([args.original], "compare", what="reads")
        )
    if args.output_format == "json":
        say_block(json.dumps(result.to_json(), indent=2))
    else:
        say_block(render_table(result, None if args.all else args.top))
    return 1 if result.problems else 0
