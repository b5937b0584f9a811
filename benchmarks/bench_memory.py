"""Memory with many findings (issue 12 item 11): peak RSS of `quantcheck check` on a big header
where every tensor draws a finding, as a multiple of the header size.

    python benchmarks/bench_memory.py [--tensors 300000] [--formats text,json,sarif,github]

Writes a sparse checkpoint (header only on disk; the tensor data is a hole): TENSORS layers of
one unmarked F8_E4M3 weight each, so every tensor draws a QC314 finding with a fix. Then, each
in its own child process, measures peak RSS (os.wait4's ru_maxrss of that child alone):
  python      the interpreter doing nothing (start-up floor)
  header      python reading the header and json.loads-ing it (the header-only baseline)
  FORMAT      `python -m quantcheck check --output-format FORMAT FILE > /dev/null`
Prints a Markdown table for BENCHMARKS.md. Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"

HEADER_ONLY = """
import json, struct, sys
with open(sys.argv[1], 'rb') as f:
    n = struct.unpack('<Q', f.read(8))[0]
    doc = json.loads(f.read(n))
print(len(doc))
"""


def make_checkpoint(path: Path, tensors: int) -> int:
    """A sparse file whose header names `tensors` unmarked FP8 weights; the header size."""
    hdr: dict[str, object] = {}
    off = 0
    for i in range(tensors):
        name = f"model.diffusion_model.blocks.{i}.attn.qkv.weight"
        hdr[name] = {"dtype": "F8_E4M3", "shape": [64, 64], "data_offsets": [off, off + 4096]}
        off += 4096
    text = json.dumps(hdr, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + off)  # the data is a hole: nothing written, nothing read
    return len(text)


def peak_rss(cmd: list[str]) -> tuple[int, int]:
    """Run `cmd` with stdout to /dev/null; (its peak RSS in bytes, exit code)."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(cmd, stdout=null, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss * 1024, proc.returncode  # Linux: kilobytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tensors", type=int, default=300_000)
    ap.add_argument("--formats", default="text,json,sarif,github")
    ap.add_argument("--make", metavar="PATH", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.make:
        print(make_checkpoint(Path(args.make), args.tensors))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "many_findings.safetensors"
        # in a child: a parent grown by building the header would pass its RSS on through fork
        # (Linux keeps ru_maxrss across exec) and inflate every figure below
        made = subprocess.run(
            [sys.executable, __file__, "--make", str(path), "--tensors", str(args.tensors)],
            check=True,
            capture_output=True,
            text=True,
        )
        size = int(made.stdout)
        rows = [
            ("python (start-up only)", *peak_rss([sys.executable, "-c", "pass"])),
            ("header only (json.loads)", *peak_rss([sys.executable, "-c", HEADER_ONLY, str(path)])),
        ]
        for fmt in args.formats.split(","):
            cmd = [sys.executable, "-m", "quantcheck", "check", "--output-format", fmt, str(path)]
            rows.append((f"check --output-format {fmt}", *peak_rss(cmd)))
    print(f"{args.tensors:,} tensors, {args.tensors:,} findings, header {size / 1e6:.1f} MB")
    print()
    print("| run | exit | peak RSS | × header |")
    print("|---|---|---|---|")
    for name, rss, code in rows:
        print(f"| {name} | {code} | {rss / 1e6:,.0f} MB | {rss / size:.1f}× |")


if __name__ == "__main__":
    main()
