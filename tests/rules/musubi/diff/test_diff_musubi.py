"""Differential: musubi-tuner's own checks (source.py, loader.py) against quantcheck's.

1. The pre-quantized gate, `inspect_convrot_int8_artifact` @725869d (the musubi target's
   older release, `musubi@725869d`; test_diff_musubi_036.py runs the newest), on every rule
   case of the rule tables (tests/rules/*cases.py, failing file and twin): it raises exactly
   where quantcheck's musubi@725869d verdict is "fails", leaving out the
   files whose verdict comes from musubi's safetensors reader, shard handling or model loader
   (QC1xx, QC5xx, QC86x: code the stand-in reader does not run), and `quantcheck explain`
   maps the message it raises to a rule quantcheck reports for the file.
2. PR #1024's exact-topology check of the MiniMax H3 Qwen3-VL-32B text encoder
   (`_validate_h3_text_encoder_convrot_topology`, run after the gate as the PR's
   `load_h3_text_encoder` did) accepts a file exactly where QC864 names it the official
   topology, on the released file's stand-in and its deviations.

Skipped unless QUANTCHECK_DIFF_MUSUBI=1 and QUANTCHECK_MUSUBI_SRC names the folder (source.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.families import standin as S

from quantcheck.checking import check_paths
from quantcheck.families.detection import topology_layers
from quantcheck.families.table import BY_NAME
from quantcheck.rules.levels import Effect

from .loader import Musubi
from .rule_cases import explained, rule_case_files

pytestmark = pytest.mark.skipif(
    os.environ.get("QUANTCHECK_DIFF_MUSUBI") != "1",
    reason="set QUANTCHECK_DIFF_MUSUBI=1 and QUANTCHECK_MUSUBI_SRC (make diff-musubi)",
)

#: Verdicts that come from code the stand-in does not run (reader, shards, model loader).
NOT_RUN = ("QC1", "QC5", "QC86")
TE = BY_NAME["qwen3vl_32b"].topologies[0]


def _gate(musubi: Musubi, paths: list[Path]) -> str | None:
    """musubi's error message, or None when the gate passes."""
    files = [str(p) for p in paths if p.suffix == ".safetensors"]
    try:
        musubi.inspect_convrot_int8_artifact(files)
    except ValueError as exc:
        return str(exc)
    return None


#: the release these functions are (runtimes/musubi.py's older step)
RELEASE = "musubi@725869d"


def _ours(paths: list[Path], kwargs: dict[str, Any]) -> tuple[bool, set[str], bool]:
    """(quantcheck says musubi 725869d fails, the codes that say so, comparable)."""
    options = {k: v for k, v in kwargs.items() if k != "target"}
    report = check_paths([str(p) for p in paths], target=RELEASE, **options)
    failing = {d.code for d in report.diagnostics if d.effect_at(RELEASE) is Effect.FAILS}
    return bool(failing), failing, not any(c.startswith(NOT_RUN) for c in failing)


def test_the_gate_agrees_with_every_rule_case(
    musubi: Musubi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows, bad = 0, []
    for label, paths, kwargs in rule_case_files(tmp_path):
        fails, codes, comparable = _ours(paths, kwargs)
        if not comparable:
            continue
        rows += 1
        said = _gate(musubi, paths)
        if (said is not None) != fails:
            bad.append(f"{label}: musubi {said!r}, quantcheck {sorted(codes)}")
            continue
        meant = explained(said) if said is not None else set()
        if said is not None and not meant & codes:
            bad.append(f"{label}: musubi said {said!r} ({meant}), not {codes}")
    with capsys.disabled():
        print(f"\nmusubi's gate: {rows - len(bad)}/{rows} rule-case files agree")
    assert rows > 100
    assert not bad, "\n".join(bad)


def _te(edit: Callable[[dict[str, int]], dict[str, int]], convrot: bool = True) -> S.Tensors:
    return S.convrot(S.released_base(TE), edit(topology_layers(TE)), convrot=convrot)


TE_CASES: dict[str, Callable[[], S.Tensors]] = {
    "the released file": lambda: _te(lambda g: g),
    "a layer left BF16": lambda: _te(
        lambda g: {k: v for k, v in g.items() if k != "model.layers.49.mlp.down_proj"}
    ),
    "the embedding quantized too": lambda: _te(lambda g: {**g, "model.embed_tokens": 256}),
    "a vision block quantized too": lambda: _te(
        lambda g: {**g, "visual.blocks.0.mlp.linear_fc1": 16}
    ),
    "another group size": lambda: _te(lambda g: {**g, "model.layers.0.self_attn.q_proj": 64}),
    "plain INT8": lambda: _te(lambda g: g, convrot=False),
}


@pytest.mark.parametrize("case", sorted(TE_CASES))
def test_the_text_encoder_topology_check_agrees_with_qc864(
    musubi: Musubi, tmp_path: Path, case: str
) -> None:
    path = S.write(tmp_path / "te.safetensors", TE_CASES[case]())
    try:
        artifact = musubi.inspect_convrot_int8_artifact(
            [str(path)], key_normalizer=musubi.normalize_h3_text_encoder_key
        )
        assert artifact is not None
        musubi.validate_text_encoder_topology(artifact)
        accepted = True
    except ValueError:
        accepted = False
    report = check_paths([str(path)])
    recipes = [d.data["recipe"] for d in report.diagnostics if d.code == "QC864"]
    assert accepted == (recipes == [TE.name]), (case, accepted, recipes)
    assert accepted == (case == "the released file")
