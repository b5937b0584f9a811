"""Issue 23 item 4: the outputs recorded before arguments were resolved once, compared byte for
byte after the change (this file and its data are removed once they are equal).

Recorded: every README sample (run as `tests/test_readme_samples.py` runs it, the whole output,
no elision), every example with `check --target all@all` in text, JSON and SARIF and `inspect`
of it (and of the examples folder), and every rule case and twin of `tests/rules` through the
CLI (`check --target all@all --output-format json`) and through `check_paths` with the case's
own arguments. Stdout, stderr and the exit code of each. Normalised: only the temporary folder a
rule case is built in (`<tmp>`); no output of these commands carries a time.

    PYTHONPATH=src python tests/test_outputs_unchanged.py --record
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "outputs_before.json.gz"
EXAMPLES = sorted(p.name for p in (REPO / "examples").glob("*.safetensors"))


def _cli(argv: list[str], tmp: str | None = None) -> str:
    from quantcheck.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code  # type: ignore[assignment]
    text = f"exit {rc}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"
    return text.replace(tmp, "<tmp>") if tmp else text


def _readme() -> dict[str, str]:
    sys.path.insert(0, str(REPO / "tests"))
    from test_readme_samples import README_SAMPLES, run_sample

    out = {}
    for s in README_SAMPLES:
        rc, stdout, stderr = run_sample(s)
        out[f"readme: {s.command}"] = f"exit {rc}\n--- stdout\n{stdout}--- stderr\n{stderr}"
    return out


def _examples() -> dict[str, str]:
    out = {}
    for name in [*EXAMPLES, ""]:
        path = f"examples/{name}"
        for fmt in ("text", "json", "sarif"):
            argv = ["check", "--target", "all@all", "--output-format", fmt, path]
            out[" ".join(argv)] = _cli(argv)
        out[f"inspect {path}"] = _cli(["inspect", path])
    return out


def _cases() -> dict[str, str]:
    sys.path.insert(0, str(REPO / "tests"))
    from quantcheck.checking import check_paths
    from rules.test_rule_table import CASES

    out = {}
    for case in CASES:
        for kind, build in (("fails", case.build), ("twin", case.twin)):
            if build is None:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                real = os.path.realpath(tmp)
                paths = [str(p) for p in build(Path(real))]
                kw = case.check_kwargs
                flags = ["--deep"] * bool(kw.get("deep")) + ["--read-weights"] * bool(
                    kw.get("read_weights")
                )
                argv = ["check", "--target", "all@all", "--output-format", "json", *flags]
                out[f"case {case.id} {kind}: cli"] = _cli([*argv, *paths], real)
                doc = check_paths(paths, **kw).to_json()
                out[f"case {case.id} {kind}: check_paths"] = json.dumps(doc, indent=1).replace(
                    real, "<tmp>"
                )
    return out


def outputs() -> dict[str, str]:
    old = os.getcwd()
    os.chdir(REPO)
    os.environ.update({"NO_COLOR": "1", "COLUMNS": "100"})
    try:
        return {**_readme(), **_examples(), **_cases()}
    finally:
        os.chdir(old)


@pytest.mark.skipif(not DATA.exists(), reason="no recorded outputs")
def test_outputs_are_byte_identical() -> None:
    before = json.loads(gzip.decompress(DATA.read_bytes()))
    now = outputs()
    assert sorted(now) == sorted(before)
    changed = [k for k in before if before[k] != now[k]]
    assert changed == [], f"{len(changed)} of {len(before)} outputs changed: {changed[:10]}"


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        got = outputs()
        raw = json.dumps(got, indent=0, sort_keys=True).encode()
        DATA.write_bytes(gzip.compress(raw, mtime=0))
        print(f"recorded {len(got)} outputs in {DATA}")
