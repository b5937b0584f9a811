"""Issue 23 item 1 (its item 4's proof): the outputs recorded before each runtime's catalog,
messages and loader reproduction moved into its rule folder, compared byte for byte after (this
file and its data are removed once they are equal).

Recorded: every README sample (run as `tests/test_readme_samples.py` runs it, the whole output,
no elision), every example with `check --target all@all` in text, JSON and SARIF and `inspect`
of it (and of the examples folder), every rule case and twin of `tests/rules` through the CLI
(`check --target all@all --output-format json`), through `check_paths` with the case's own
arguments and through `quantcheck.compat.sglang.simulate_load`; `explain` of every code and of
every known runtime message (each pattern's template filled as tests/rules/test_explain.py
fills it) in text and JSON; `rules` in text, JSON and Markdown, and docs/rules.md; `--help` of
the program and of every command. Stdout,
stderr and the exit code of each. Normalised: only the temporary folder a rule case is built
in (`<tmp>`); no output of these commands carries a time.

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
DATA = REPO / "tests" / "data" / "outputs_before_i23.json.gz"
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


def _simulated(paths: list[str]) -> str:
    from quantcheck.compat.sglang import simulate_load

    try:
        return repr(simulate_load(paths))
    except Exception as exc:  # the drop-in raises what safetensors raises
        return f"raised {type(exc).__name__}: {exc}"


def _cases() -> dict[str, str]:
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
                out[f"case {case.id} {kind}: simulate_load"] = _simulated(paths).replace(
                    real, "<tmp>"
                )
    return out


def _explained() -> dict[str, str]:
    from quantcheck.explain.messages import all_patterns
    from quantcheck.rules.registry import all_rules
    from rules.test_explain import LAYER, instantiate

    out = {}
    texts = [*all_rules()]
    texts += [
        instantiate(p.template, prefix=LAYER, key=f"{LAYER}.comfy_quant") for p in all_patterns()
    ]
    for text in texts:
        for fmt in ("text", "json"):
            out[f"explain {fmt} {text}"] = _cli(["explain", "--output-format", fmt, text])
    for fmt in ("text", "json", "markdown"):
        out[f"rules {fmt}"] = _cli(["rules", "--output-format", fmt])
    out["docs/rules.md"] = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    return out


def _helps() -> dict[str, str]:
    from quantcheck.cli.commands import EXTRA_COMMANDS
    from quantcheck.cli.main import CORE_COMMANDS

    out = {"--help": _cli(["--help"])}
    for name in [*CORE_COMMANDS, *EXTRA_COMMANDS]:
        out[f"{name} --help"] = _cli([name, "--help"])
    return out


def outputs() -> dict[str, str]:
    old = os.getcwd()
    os.chdir(REPO)
    sys.path[:0] = [str(REPO / "tests"), str(REPO)]
    os.environ.update({"NO_COLOR": "1", "COLUMNS": "100"})
    try:
        return {**_readme(), **_examples(), **_cases(), **_explained(), **_helps()}
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
