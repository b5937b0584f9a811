"""The runtime registry: `Runtime` and `Release` records, registration and effect lookup.
Standard library only (the check path imports it)."""

from __future__ import annotations

from quantcheck._record import factory, record
from quantcheck.rules.levels import Effect

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from quantcheck.diagnostics import Diagnostic


@record
class Release:
    """One modelled release: its name and what changes from it on (effects by rule code).

    `quantize`: formats `quantize --target NAME@RELEASE` cannot write for this release on
    (format -> why; None: writable again from this release). `marker_fields`: marker fields
    `quantize` adds to a format's layers from this release on (format -> fields; {}: none
    again). Both are deltas on the release before, like `effects`.
    """

    name: str
    effects: dict[str, Effect] = factory(dict)
    note: str = ""
    quantize: dict[str, str | None] = factory(dict)
    marker_fields: dict[str, dict[str, Any]] = factory(dict)
    #: other spellings `--target NAME@ALIAS` accepts for this release (the commit or pull
    #: request it was first named by); reports use `name`
    aliases: tuple[str, ...] = ()
    #: formats whose support from this release on rests on a reading that is not the runtime's
    #: own code (format -> why), shown next to a status that depends on it
    unverified: dict[str, str] = factory(dict)


@record
class Runtime:
    """One target: name (the `--target` value and effects key), title, releases and rules.

    `checks`: "module:callable" (imported on first use) taking a Checkpoint and returning an
    object with `file_findings()` and `layer_findings(layer)`: the runtime's own rules.
    `quantize_refusal`: "module:callable" (fmt, options, n, k) -> why the runtime cannot load
    what `quantize` would write (None: it can): with n = k = 0 the format and options at all,
    else an [n, k] layer of a format it loads.
    """

    name: str
    title: str
    releases: tuple[Release, ...]
    checks: str = ""
    quantize_refusal: str = ""
    based_on: str | None = None
    effects: dict[str, Effect] = factory(dict)
    doc: str = ""
    #: Judged when no `--target` is given (sglang and ComfyUI, the runtimes the format is
    #: defined for); every other runtime is judged with `--target all` or by name.
    default_target: bool = False
    #: "module:attribute" naming a list of `explain.messages.MessagePattern`: the runtime's
    #: own error messages, so `quantcheck explain` recognises them (loaded on first use).
    messages: str = ""
    #: "module:callable" (checkpoint, release name or None for the newest) -> dict of extra
    #: keys for that target's JSON summary (sglang: which reader takes the file, `path`).
    paths: str = ""
    #: Rule code -> one line saying why the code does what it does to this runtime (its
    #: effects table's entry, or none): every generic code of a runtime that the catalogs do
    #: not declare has one (`decision`), shown under the rule's evidence.
    reasons: dict[str, str] = factory(dict)
    #: The catalogs declare this runtime's effect of every generic rule (the built-in
    #: runtimes, positionally); the rule's evidence is the reason.
    catalog: bool = False
    #: The package of its rule folder (`quantcheck.rules.<name>`): its `catalog` module's
    #: RULES join the registry while the runtime is registered ("" for none).
    folder: str = ""
    #: Formats `quantize` also declares in the header (`_quantization_metadata`, the marker
    #: object itself) for this runtime: a loader of it reads only the header (sglang's
    #: --transformer-weights-path builds its FP8 config from that declaration).
    header_formats: tuple[str, ...] = ()
    #: "module:attribute" naming the runtime's GPU decisions (`rules/gpu/plan.py` describes
    #: the object): how each quantized layer runs on a `--gpu` device ("" for none)
    gpu: str = ""
    #: "module:attribute" naming a `Loaders`: how the runtime chooses among several loaders
    #: of one file ("" for a runtime that loads a file one way); `loaders_of` gives it
    loaders: str = ""
    #: "module:attribute" naming a `KeyPlumbing`: how the runtime renames a file's keys before
    #: its markers meet its layers ("" for a runtime that matches names exactly)
    keys: str = ""

    @property
    def newest(self) -> Release:
        return self.releases[-1]

    def effect_table(self, release: str | None = None) -> dict[str, Effect]:
        """Effects by rule code at `release` (None: the newest): the runtime's table, then each
        release's changes in order up to that one (a later release overrides an earlier one)."""
        key = (generation, release)
        hit = self.__dict__.get("_tables", {}).get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        out = dict(self.effects)
        for rel in self._up_to(release):
            out.update(rel.effects)
        self.__dict__.setdefault("_tables", {})[key] = out
        return out

    def quantize_table(self, release: str | None = None) -> dict[str, str]:
        """Formats `quantize` cannot write for `release` (None: the newest): format -> why."""
        out: dict[str, str | None] = {}
        for rel in self._up_to(release):
            out.update(rel.quantize)
        return {f: why for f, why in out.items() if why}

    def marker_table(self, release: str | None = None) -> dict[str, dict[str, Any]]:
        """Marker fields `quantize` adds per format for `release` (None: the newest)."""
        out: dict[str, dict[str, Any]] = {}
        for rel in self._up_to(release):
            out.update(rel.marker_fields)
        return {f: fields for f, fields in out.items() if fields}

    def _up_to(self, release: str | None) -> tuple[Release, ...]:
        if release is None:
            return self.releases
        return self.releases[: self.releases.index(self.release(release)) + 1]

    def release(self, name: str | None) -> Release:
        """The release called `name` or one of its aliases (None: the newest); KeyError if
        not modelled."""
        if name is None:
            return self.newest
        for rel in self.releases:
            if rel.name == name:
                return rel
        for rel in self.releases:
            if name in rel.aliases:
                return rel
        raise KeyError(f"{self.name} has no modelled release {name!r}")

    def unverified_from(self, release: str | None) -> dict[str, str]:
        """Formats whose support at `release` (None: the newest) rests on an unverified
        reading: format -> why (the `unverified` of this release and the ones before)."""
        out: dict[str, str] = {}
        for rel in self._up_to(release):
            out.update(rel.unverified)
        return out

    def release_names(self) -> tuple[str, ...]:
        return tuple(rel.name for rel in self.releases)

    def affected(self, code: str) -> list[str]:
        """The releases (oldest first) whose own effect table says rule `code` breaks or
        degrades them (the release data only, not a rule's declared effects)."""
        return [
            r.name
            for r in self.releases
            if self.effect_table(r.name).get(code, Effect.NONE) is not Effect.NONE
        ]

    @property
    def label(self) -> str:
        """`title newest-release`, as docs and messages name what is modelled."""
        return f"{self.title} {self.newest.name}"


@record
class Loaders:
    """How a runtime that reads one file with several loaders decides between them: its
    record's `loaders` hook (sglang's: `rules/sglang/loaders.py` `SGLANG_LOADERS`). Its
    `paths` hook gives each target of it `loaders` (each loader's reading of the file) and
    `loader_family` (the model family the choice follows); reports, `quantize` and `fix` ask
    these functions, never the findings' effects alone."""

    #: the loaders' names, in the order the outputs list them
    names: tuple[str, ...]
    #: the status of a loader that does not take the file's model family
    na: str
    #: (model family or None, verdicts or readings by loader) -> the deciding loader (None:
    #: none takes the file)
    chosen: Callable[[str | None, dict[str, dict[str, Any]]], str | None]
    #: (findings, target key, readings by loader) -> each loader's verdict: `status`,
    #: `reason`, `errors`, `degraded`, `codes`
    verdicts: Callable[
        [list[Diagnostic], str, dict[str, dict[str, Any]]], dict[str, dict[str, Any]]
    ]
    #: (finding, loader, its reading) -> whether that loader counts the finding
    reads: Callable[[Diagnostic, str, dict[str, Any]], bool]
    #: (findings, target keys, the report's `paths`) -> the findings, each one that no
    #: deciding loader reads made a note naming the loaders that read it (`data["read_by"]`)
    decided: Callable[
        [list[Diagnostic], tuple[str, ...], dict[str, dict[str, Any]]], list[Diagnostic]
    ]
    #: (deciding loader, verdicts, model family) -> the decision in words, one part a line
    choice_said: Callable[[str, dict[str, dict[str, Any]], str | None], list[str]]
    #: (a finding's `data["read_by"]`) -> which loaders read it, in words
    read_by_text: Callable[[list[str]], str]


@record
class KeyPlumbing:
    """How a runtime renames a file's keys before its markers meet its layers: its record's
    `keys` hook (ComfyUI's: `rules/comfyui/keys.py` `COMFYUI_KEYS`)."""

    #: (stored tensor names) -> the model prefix the runtime strips ("" for none)
    model_prefix: Callable[[Iterable[str]], str]
    #: (checkpoint, a header entry's layer name, the stored layer it names once a model
    #: prefix is added or removed) -> (what that does to the runtime, the clause QC222's
    #: message adds), or None when the plumbing changes nothing (names match exactly); the
    #: checkpoint is a `model.checkpoint.Checkpoint` (a layer above this one)
    header_entry: Callable[[Any, str, str], tuple[Effect, str] | None]


_RUNTIMES: dict[str, Runtime] = {}
_LOADED: dict[str, Any] = {}
#: True while no runtime has an effects table or a base: effects dicts naming every runtime
#: are then already resolved (the fast path of `resolve_effects`).
_plain = True
#: Changes whenever a runtime is registered or removed (diagnostics cache their effects on it).
generation = 0


#: every `runtime_cache` dict (emptied by `_update`)
_CACHES: list[dict[Any, Any]] = []


def runtime_cache() -> dict[Any, Any]:
    """A new dict for memoized answers that depend on the registered runtimes (their release
    data, effects, targets): it is emptied whenever a runtime is registered or removed."""
    cache: dict[Any, Any] = {}
    _CACHES.append(cache)
    return cache


def _update() -> None:
    global _plain, generation
    _plain = all(rt.based_on is None and not rt.effect_table() for rt in _RUNTIMES.values())
    generation += 1
    for cache in _CACHES:
        cache.clear()


def register_runtime(runtime: Runtime) -> Runtime:
    """Add a runtime; registering a name twice is an error."""
    if runtime.name in _RUNTIMES or runtime.name in ("all", "default"):
        raise ValueError(f"runtime {runtime.name!r} is already registered")
    if runtime.based_on is not None and runtime.based_on not in _RUNTIMES:
        raise ValueError(f"runtime {runtime.name!r} is based on unknown {runtime.based_on!r}")
    _RUNTIMES[runtime.name] = runtime
    _update()
    return runtime


def unregister_runtime(name: str) -> None:
    """Remove a runtime (tests that register a fake one)."""
    del _RUNTIMES[name]
    _update()


def runtimes() -> tuple[Runtime, ...]:
    """Every registered runtime, in registration order (the built-in ones first)."""
    return tuple(_RUNTIMES.values())


def runtime_names() -> tuple[str, ...]:
    return tuple(_RUNTIMES)


def get_runtime(name: str) -> Runtime:
    return _RUNTIMES[name]


def loaders_of(target: str) -> Loaders | None:
    """The `loaders` hook of the runtime of target key (or runtime name) `target`; None when
    that runtime loads a file one way."""
    ref = _RUNTIMES[target.partition("@")[0]].loaders
    return load(ref) if ref else None


def default_targets() -> tuple[str, ...]:
    """The runtimes judged when no target is named (`Runtime.default_target`)."""
    return tuple(n for n, rt in _RUNTIMES.items() if rt.default_target)


def target_choices() -> tuple[str, ...]:
    """`--target` values: every runtime, "default" and "all" (each also as `NAME@RELEASE`,
    `NAME@all`, `all@all`, and comma-separated lists: `parse_target` accepts those)."""
    return ("default", "all", *_RUNTIMES)


def split_target(key: str) -> tuple[Runtime, str | None]:
    """(runtime, release name or None for the newest) of one target key (`sglang`,
    `sglang@0.5.19`); KeyError when the runtime or release is not modelled."""
    name, at, rel = key.partition("@")
    rt = _RUNTIMES[name]
    if at:
        found = rt.release(rel)
        return rt, (None if found is rt.newest else found.name)
    return rt, None


def targets_of(target: str) -> tuple[str, ...]:
    """The target keys a `--target` value means: `default` -> the default runtimes (newest
    release); `all` -> every runtime; `NAME` -> NAME (its newest); `NAME@REL` -> that release;
    `NAME@all` -> every modelled release of NAME, oldest first; `all@all` / `default@all` ->
    every release of those runtimes; `A,B` -> A's keys then B's (each once)."""
    hit = _KEYS.get(target)
    if hit is None:
        hit = _expand_target(target)
        if len(_KEYS) < 256:
            _KEYS[target] = hit
    return hit


#: {`--target` value: its keys}: every checkpoint of a run asks for the same value's keys (a
#: tuple, so the shared answer cannot be changed by a caller).
_KEYS: dict[str, tuple[str, ...]] = runtime_cache()


def _expand_target(target: str) -> tuple[str, ...]:
    """`targets_of` without the memo."""
    if "," in target:
        keys: dict[str, None] = {}
        for part in target.split(","):
            if part.strip():
                keys.update(dict.fromkeys(targets_of(part.strip())))
        return tuple(keys)
    name, at, rel = target.partition("@")
    if name == "all":
        names = runtime_names()
    elif name == "default":
        names = default_targets()
    else:
        names = (name,)
    if not at:
        return names
    if rel == "all":
        return tuple(f"{n}@{r.name}" for n in names for r in _RUNTIMES[n].releases)
    return tuple(f"{n}@{_canonical(n, rel)}" for n in names)


def _canonical(runtime: str, release: str) -> str:
    """The name of `runtime`'s release `release` (an alias: the release it names; unknown
    runtimes and releases as given, for `parse_target` to report)."""
    try:
        return _RUNTIMES[runtime].release(release).name
    except KeyError:
        return release


def parse_target(value: str) -> str:
    """`value` in its one spelling (each comma-separated part without surrounding whitespace,
    empty parts dropped) if it names modelled runtimes/releases, else ValueError saying what
    is. Every command parses `--target` with it, so nothing downstream sees `' sglang'`."""
    parts = [p.strip() for p in value.split(",")]
    parts = [p for p in parts if p] or [""]
    for part in parts:
        try:
            keys = targets_of(part)
            for key in keys:
                split_target(key)
            if not keys:
                raise KeyError(part)
        except KeyError:
            name = part.partition("@")[0]
            if name in _RUNTIMES:
                rels = ", ".join(
                    r.name + (f" (or {', '.join(r.aliases)})" if r.aliases else "")
                    for r in _RUNTIMES[name].releases
                )
                raise ValueError(
                    f"unknown release in {part!r}: {name} models {rels} (or {name}@all)"
                ) from None
            raise ValueError(
                f"unknown target {part!r}: choose from "
                f"{', '.join(target_choices())}, NAME@RELEASE, NAME@all, all@all, "
                "or a comma-separated list of those"
            ) from None
    return ",".join(parts)


def release_span(names: tuple[str, ...] | list[str], hit: set[str] | list[str]) -> str:
    """The releases `hit` among `names` (oldest first) in few words: `0.5.19`, `≤0.5.21`,
    `≥0.5.20`, `0.5.19–0.5.21`, or runs joined by ", " (`0.5.18, ≥0.5.20`); "" for none."""
    runs: list[list[int]] = []
    for i, name in enumerate(names):
        if name in hit:
            if runs and runs[-1][1] == i - 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
    parts = []
    last = len(names) - 1
    for a, b in runs:
        if a == b:
            parts.append(names[a])
        elif a == 0:
            parts.append(f"≤{names[b]}")
        elif b == last:
            parts.append(f"≥{names[a]}")
        else:
            parts.append(f"{names[a]}–{names[b]}")
    return ", ".join(parts)


def release_label(runtime: str, names: tuple[str, ...] | list[str], hit: set[str]) -> str:
    """A runtime with the releases `hit` among its modelled `names`: `sglang` (all of them),
    `sglang@0.5.19` (one), `sglang ≤0.5.21` (a span)."""
    if all(n in hit for n in names):
        return runtime
    span = release_span(names, hit)
    return f"{runtime}@{span}" if span in names else f"{runtime} {span}"


def release_summary(runtime: Runtime, code: str, declared: dict[str, Effect]) -> str:
    """The releases where a rule's effect on `runtime` differs from its newest release's, for
    the docs and `explain`: `fails ≤0271a469`, `degraded 0.5.18, none 0.5.19` ("" when every
    modelled release has the same effect)."""
    per = {r.name: effect_on(runtime, code, None, declared, r.name) for r in runtime.releases}
    newest = per[runtime.newest.name]
    names = runtime.release_names()
    order = [e for e in dict.fromkeys(per.values()) if e is not newest]
    return ", ".join(
        f"{e.value} {release_span(names, {r for r, x in per.items() if x is e})}" for e in order
    )


def release_keys(runtime: str) -> tuple[str, ...]:
    """`runtime@release` for every modelled release of `runtime`, oldest first."""
    return tuple(f"{runtime}@{r.name}" for r in _RUNTIMES[runtime].releases)


def load(ref: str) -> Any:
    """The object a "module:attribute" reference names (imported once, on first use)."""
    hit = _LOADED.get(ref)
    if hit is None:
        import importlib

        module, _, attr = ref.partition(":")
        hit = _LOADED[ref] = getattr(importlib.import_module(module), attr)
    return hit


def effects(*by_position: Effect | str, **by_name: Effect | str) -> dict[str, Effect]:
    """Per-runtime effects as the checks and catalogs write them.

    Positional values follow the registration order, whose first entries are the built-in
    runtimes (sglang, comfyui: `quantcheck.runtimes.builtin` registers them when the package is
    imported); keywords name any runtime. A registered runtime not named is unaffected unless it
    is `based_on` another (then it follows that one, as `effect_on` describes).
    """
    out = {name: Effect(v) for name, v in zip(_RUNTIMES, by_position, strict=False)}
    for name, v in by_name.items():
        out[name] = Effect(v)
    for name, rt in _RUNTIMES.items():
        if name not in out and rt.based_on is None:
            out[name] = Effect.NONE
    return out


def unaffected() -> dict[str, Effect]:
    """Effects of a finding that changes nothing on any runtime, whatever its code does
    elsewhere (e.g. an entry with extra fields, under a code that otherwise fails): no
    runtime's effects table overrides effects that are none everywhere (`effect_on`)."""
    return dict.fromkeys(_RUNTIMES, Effect.NONE)


def resolved(effects: dict[str, Effect]) -> bool:
    """Whether `effects` already says the final effect on every runtime (the common case)."""
    return _plain and effects.keys() == _RUNTIMES.keys()


def resolve_effects(
    code: str, given: dict[str, Effect] | None, declared: dict[str, Effect]
) -> dict[str, Effect]:
    """The effect of a finding on every registered runtime (`effect_on` for each)."""
    src = given if given is not None else declared
    if resolved(src):
        return src
    return {rt.name: effect_on(rt, code, given, declared) for rt in _RUNTIMES.values()}


def effect_at(
    key: str, code: str, given: dict[str, Effect] | None, declared: dict[str, Effect]
) -> Effect:
    """What a finding of rule `code` does to one target key (`sglang`, `sglang@0.5.19`)."""
    rt, rel = split_target(key)
    return effect_on(rt, code, given, declared, rel)


def effect_on(
    runtime: Runtime,
    code: str,
    given: dict[str, Effect] | None,
    declared: dict[str, Effect],
    release: str | None = None,
) -> Effect:
    """What a finding of rule `code` does to `runtime` at `release` (None: its newest; the
    lookup order in the module doc; a base runtime is looked up at its newest)."""
    if given and all(e is Effect.NONE for e in given.values()):
        return Effect.NONE  # an instance its check marks harmless for every runtime
    rt: Runtime | None = runtime
    while rt is not None:
        hit = rt.effect_table(release if rt is runtime else None).get(code)
        if hit is None and given is not None:
            hit = given.get(rt.name)
        if hit is None:
            hit = declared.get(rt.name)
        if hit is not None:
            return hit
        rt = _RUNTIMES.get(rt.based_on) if rt.based_on else None
    return Effect.NONE


#: The generic codes (every runtime decides them): container, markers, layers, numerics,
#: shards. QC6xx and QC7xx are the runtimes' own.
GENERIC_FAMILIES = ("QC1", "QC2", "QC3", "QC4", "QC5")


def decision(
    runtime: Runtime, code: str, declared: dict[str, Effect], prose: str = ""
) -> tuple[Effect, str] | None:
    """(effect at the newest release, the one-line reason) of rule `code` (declared effects
    `declared`, documentation `prose`) on `runtime`; None when nothing decides it (a silent
    none). The reason is the runtime's own (`Runtime.reasons`); the catalog entry's evidence
    (a built-in runtime: a generic code that affects it, or whose prose names it); its own
    rule (declared for it, or in its release data); its base's (a fork); or another
    runtime's own rule (QC6xx/QC7xx, reported for that runtime only)."""
    effect = effect_on(runtime, code, None, declared)
    why = runtime.reasons.get(code)
    if why is not None:
        return effect, why
    generic = code.startswith(GENERIC_FAMILIES)
    if generic and runtime.catalog:
        named = runtime.name in prose.lower() or runtime.title.lower() in prose.lower()
        if effect is not Effect.NONE or named:
            return effect, "the rule's catalog entry (evidence above)"
        return None
    own = declared.get(runtime.name, Effect.NONE) is not Effect.NONE or any(
        code in rel.effects for rel in runtime.releases
    )
    if own and not generic:
        return effect, f"{runtime.title}'s own rule"
    if runtime.based_on is not None:
        base = decision(_RUNTIMES[runtime.based_on], code, declared, prose)
        if base is not None:
            hit = runtime.effect_table().get(code)
            if hit is None or hit is base[0]:
                return effect, f"as {runtime.based_on} (the same loader code): {base[1]}"
        return None
    if not generic and effect is Effect.NONE:
        return effect, "another runtime's own rule"
    return None
