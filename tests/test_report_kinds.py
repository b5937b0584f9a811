"""Per-target counts, the target filter and the release matrix look each kind of finding up once
(by code and its given effects object); the results equal a lookup per finding."""

from __future__ import annotations

from quantcheck.checking import _concerns, select_diagnostics
from quantcheck.diagnostics import Diagnostic, Effect, distinct_kinds, kind_of
from quantcheck.results import Report
from quantcheck.rules import codes as R
from quantcheck.runtimes import effects, targets_of


def _findings() -> list[Diagnostic]:
    shared = effects("fails", "degraded")  # one object given to findings of two codes
    other = effects("none", "fails")
    out = []
    for i in range(3):
        out += [
            Diagnostic(R.QC301, f"a{i}", effects=shared),
            Diagnostic(R.QC611, f"b{i}", effects=shared),
            Diagnostic(R.QC301, f"c{i}", effects=other),
            Diagnostic(R.QC301, f"d{i}", effects=dict(other)),  # equal contents, own object
            Diagnostic(R.QC611, f"e{i}"),
            Diagnostic(R.QC741, f"f{i}"),
        ]
    return out


def test_target_counts_equal_a_lookup_per_finding() -> None:
    diags = _findings()
    keys = targets_of("all@all") + targets_of("all")
    report = Report(inputs=[], diagnostics=diags, targets=keys)
    for key in keys:
        effs = [d.effect_at(key) for d in diags]
        st = report.target_status(key)
        assert st["errors"] == effs.count(Effect.FAILS)
        assert st["degraded"] == effs.count(Effect.DEGRADED)


def test_target_filter_and_kinds_equal_a_lookup_per_finding() -> None:
    diags = _findings()
    for target in ("default", "all", "sdcpp", "sglang@all", "comfyui,musubi"):
        keys = targets_of(target)
        want = [d for d in diags if _concerns(d, keys)]
        assert select_diagnostics(diags, target=target) == want
    kinds = distinct_kinds(diags)
    assert list(kinds) == list(dict.fromkeys(kind_of(d) for d in diags))
    assert all(kind_of(d) == k for k, d in kinds.items())
