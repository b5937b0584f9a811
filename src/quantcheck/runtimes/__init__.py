"""Runtimes as data: every target quantcheck models, its releases, its own checks and effects.

A runtime is one record (`builtin.py` holds sglang and ComfyUI). The registry drives `--target`
choices, the per-target summary, the per-runtime effects of every diagnostic and the docs;
adding a runtime is `register_runtime(Runtime(...))`, never an edit of the rule engine.

How a diagnostic's effect on runtime R is found (`effect_on`), first hit wins (a finding
whose check gave it effects that are none for every runtime, `unaffected()`, e.g. QC121's
harmless extra entry fields, is none on every runtime, tables included: tables describe a
code's harmful instances):
1. R's own table `Runtime.effects` (code -> effect: what R's code does with that finding),
   updated by its releases' changes up to the newest;
2. the effects the check gave the diagnostic, for R by name;
3. the rule's declared effects (the catalogs), for R by name;
4. the runtime R is `based_on` (a fork loading files through its code), by the same steps;
5. none.

Releases (issue 13): `Runtime.releases` lists the modelled releases oldest first, each a delta
on the one before (effects by code from that release on); a bare runtime name means the newest.
A target key is `NAME` (newest) or `NAME@RELEASE`; `--target` also takes `NAME@all` and `all@all`
(`targets_of` expands them). sglang's releases are in `sglang_releases.py`.

Standard library only (the check path imports it).
"""

from quantcheck.runtimes.builtin import BUILTIN
from quantcheck.runtimes.registry import (
    KeyPlumbing,
    Loaders,
    Release,
    Runtime,
    decision,
    default_targets,
    effect_at,
    effect_on,
    effects,
    get_runtime,
    load,
    loaders_of,
    parse_target,
    register_runtime,
    release_keys,
    release_label,
    release_span,
    release_summary,
    resolve_effects,
    resolved,
    runtime_names,
    runtimes,
    split_target,
    target_choices,
    targets_of,
    unaffected,
    unregister_runtime,
)

__all__ = [
    "BUILTIN",
    "KeyPlumbing",
    "Loaders",
    "Release",
    "Runtime",
    "decision",
    "default_targets",
    "effect_at",
    "effect_on",
    "effects",
    "get_runtime",
    "load",
    "loaders_of",
    "parse_target",
    "register_runtime",
    "release_keys",
    "release_label",
    "release_span",
    "release_summary",
    "resolve_effects",
    "resolved",
    "runtime_names",
    "runtimes",
    "split_target",
    "target_choices",
    "targets_of",
    "unaffected",
    "unregister_runtime",
]
