"""Grouping for the default text report: one finding over many layers is one entry.

Two foldings, both for reading only (JSON and SARIF keep every instance):

- a *consequence* — a finding whose rule `follows` another code found on the same layer for
  the same runtimes (musubi's layout errors on a layer whose format musubi does not load) — is
  named on its cause's entry instead of being a second entry;
- findings of one code on many layers whose messages differ only in the layer's name (and in
  numbers such as shapes) are one entry: the message with the varying parts folded (`<layer>`,
  `…`), listed under a heading with the count and a pattern of the layer names
  (`transformer_blocks.{0..59}.attn.{to_k,to_q}`).

Independent findings of a layer are never folded: only rules that declare what they follow
fold, and only under a finding of that code on the same layer. Standard library only.
"""

from __future__ import annotations

import re

from quantcheck.diagnostics import Diagnostic
from quantcheck.runtimes import loaders_of

TYPE_CHECKING = False  # typing is not imported on the check path (start-up time)
if TYPE_CHECKING:
    from collections.abc import Iterable

_NUMBER = re.compile(r"(\d+)")  # captured: split keeps the numbers at odd positions
#: Fewest layers a finding is grouped over (fewer stay under their own layers); how many
#: names a heading lists before it shows only patterns, and how many patterns.
MIN_GROUP = 3
FIRST_NAMES = 3
PATTERNS = 2


class Entry:
    """One finding as the text report shows it, standing for one or more instances."""

    __slots__ = (
        "consequences",
        "first",
        "fix_parts",
        "fix_varies",
        "order",
        "parts",
        "seen",
        "varies",
        "wheres",
    )

    def __init__(
        self,
        d: Diagnostic,
        where: str,
        consequences: tuple[str, ...],
        order: int = 0,
        parts: tuple[list[str], list[str]] | None = None,
    ) -> None:
        self.first = d
        self.order = [order]  # the position of each instance in the report
        self.wheres = [where]
        self.seen = {where}
        self.parts, self.fix_parts = parts or templates(d, where)
        self.varies = [False] * len(self.parts)
        self.fix_varies = [False] * len(self.fix_parts)
        self.consequences = consequences

    def add(self, where: str, order: int, parts: tuple[list[str], list[str]]) -> None:
        self.order.append(order)
        self.wheres.append(where)
        self.seen.add(where)
        _mark_varying(self.parts, self.varies, parts[0])
        _mark_varying(self.fix_parts, self.fix_varies, parts[1])

    @property
    def message(self) -> str:
        """The message, exact for one instance; for several, the layer's own name is `<layer>`
        and numbers that differ between instances are `…`."""
        if len(self.wheres) == 1:
            return self.first.message
        return _join(self.parts, self.varies)

    @property
    def fix_description(self) -> str:
        if len(self.wheres) == 1 or self.first.fix is None:
            return self.first.fix.description if self.first.fix else ""
        return _join(self.fix_parts, self.fix_varies)


LAYER = "\0"  # stands for the layer's name inside a template


def templates(
    d: Diagnostic, where: str, memo: dict[str, list[str]] | None = None
) -> tuple[list[str], list[str]]:
    """The split templates of a finding's message and of its fix's description (`memo`:
    splits already made, by text; most findings of a file share their texts)."""
    memo = {} if memo is None else memo
    return _split(d.message, where, memo), _split(d.fix.description if d.fix else "", where, memo)


def _split(text: str, where: str, memo: dict[str, list[str]]) -> list[str]:
    """`text` with `where` (as a whole name) replaced by LAYER, split into alternating
    non-number and number pieces (numbers at odd positions)."""
    if where and where in text:
        text = _replace_name(text, where)
    hit = memo.get(text)
    if hit is None:
        hit = memo[text] = _NUMBER.split(text)
    return hit


def _replace_name(text: str, name: str) -> str:
    """Every occurrence of `name` not followed by a name character, as LAYER (plain string
    search: a pattern per layer name would be compiled once per layer)."""
    out, pos = [], 0
    while (at := text.find(name, pos)) >= 0:
        end = at + len(name)
        if end < len(text) and (text[end].isalnum() or text[end] == "_"):
            out.append(text[pos:end])
        else:
            out += [text[pos:at], LAYER]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def skeleton(parts: list[str]) -> tuple[str, ...]:
    """The template without its numbers: findings group when their skeletons agree."""
    return tuple(parts[0::2])


def _mark_varying(parts: list[str], varies: list[bool], other: list[str]) -> None:
    for i in range(1, len(parts), 2):
        if parts[i] != other[i]:
            varies[i] = True


def _join(parts: list[str], varies: list[bool]) -> str:
    text = "".join("…" if v else p for p, v in zip(parts, varies, strict=True))
    return text.replace(LAYER, "<layer>")


def where_of(d: Diagnostic) -> str:
    return d.layer or d.tensor or ""


def finding_labels(d: Diagnostic, targets: tuple[str, ...]) -> list[str]:
    """The runtimes a finding affects as the report names them (`target_labels`); a finding
    of a loader that does not read the file (`data["read_by"]`, the runtime's `loaders` hook)
    says which loaders it is about: `sglang (only with --comfyui-mode)`; so does one the
    deciding loader does not read that decides another runtime's verdict."""
    labels = d.target_labels(targets)
    if "read_by" not in d.data:
        return labels
    out = []
    for label in labels:  # `sglang`, `sglang@0.5.19`, `sglang ≤0.5.21`
        hook = loaders_of(label.partition(" ")[0].partition("@")[0])
        out.append(f"{label} {hook.read_by_text(d.data['read_by'])}" if hook else label)
    return out


def group(diags: Iterable[Diagnostic], keys: tuple[str, ...]) -> list[list[Entry]]:
    """The findings of one file as buckets of entries: each bucket shares one set of layers
    (a heading), buckets in the order their first finding came."""
    diags = list(diags)
    labels = [tuple(finding_labels(d, keys)) for d in diags]
    folded, causes = consequences(diags, labels)
    entries: dict[tuple[object, ...], Entry] = {}
    memo: dict[str, list[str]] = {}
    for i, d in enumerate(diags):
        if i in folded:
            continue
        where = where_of(d)
        follows = causes.get(i, ())
        parts = templates(d, where, memo)
        key = (
            d.code,
            d.effective_severity,
            labels[i],
            skeleton(parts[0]),
            skeleton(parts[1]),
            d.fix.safety if d.fix else None,
            follows,
            # the tensor a finding names relative to its layer (`weight_scale`)
            _suffix(d.tensor, where),
            bool(where),
        )
        e = entries.get(key) if where else None
        if e is None or where in e.seen:
            e = Entry(d, where, follows, i, parts)
            entries[key if where and key not in entries else (key, i)] = e
        else:
            e.add(where, i, parts)
    shown: list[Entry] = []
    for e in entries.values():
        if len(e.wheres) >= MIN_GROUP or len(e.wheres) == 1:
            shown.append(e)
            continue
        for i in e.order:  # too few to group: each stays under its own layer
            shown.append(Entry(diags[i], where_of(diags[i]), causes.get(i, ()), i))
    buckets: dict[tuple[str, ...], list[Entry]] = {}
    for e in sorted(shown, key=lambda e: e.order[0]):
        buckets.setdefault(tuple(e.wheres), []).append(e)
    return list(buckets.values())


def _suffix(tensor: str | None, where: str) -> str | None:
    if tensor and where and tensor.startswith(where + "."):
        return tensor[len(where) :]
    return tensor if tensor != where else None


def consequences(
    diags: list[Diagnostic], labels: list[tuple[str, ...]]
) -> tuple[set[int], dict[int, tuple[str, ...]]]:
    """(indexes of findings folded into a cause, cause index -> the codes folded into it).
    A finding folds when its rule `follows` a code found on the same file and layer whose
    runtimes include all of its own."""
    by_place: dict[tuple[str | None, str], dict[str, int]] = {}
    for i, d in enumerate(diags):
        if d.layer:
            by_place.setdefault((d.file, d.layer), {}).setdefault(d.code, i)
    folded: set[int] = set()
    causes: dict[int, list[str]] = {}
    for i, d in enumerate(diags):
        follows = d.rule.follows
        if not follows or not d.layer:
            continue
        here = by_place.get((d.file, d.layer), {})
        for code in follows:
            c = here.get(code)
            if c is not None and c != i and set(labels[i]) <= set(labels[c]):
                folded.add(i)
                names = causes.setdefault(c, [])
                if d.code not in names:
                    names.append(d.code)
                break
    return folded, {c: tuple(sorted(v)) for c, v in causes.items()}


def heading(wheres: list[str]) -> list[str]:
    """The heading lines of a bucket: the layer itself, or the count and patterns (and the
    first few names when the patterns do not list them)."""
    if len(wheres) == 1:
        return [wheres[0] or "(file)"]
    pats = name_patterns(wheres)
    shown = ", ".join(pats[:PATTERNS])
    more = len(pats) - PATTERNS
    head = f"{len(wheres):,} layers: {shown}" + (f" and {more} more patterns" if more > 0 else "")
    if len(wheres) <= FIRST_NAMES or len(pats) == len(wheres):
        return [head]
    return [head, "first: " + ", ".join(wheres[:FIRST_NAMES]) + ", …"]


def name_patterns(names: list[str]) -> list[str]:
    """Dotted names merged into patterns that stand for exactly those names:
    `blocks.{0..59}.attn.{to_k,to_q}` is every block's to_k and to_q. In order of each
    pattern's first name."""
    rows: list[tuple[int, list[frozenset[str]]]] = [
        (i, [frozenset((t,)) for t in n.split(".")]) for i, n in enumerate(names)
    ]
    changed = True
    while changed and len(rows) > 1:
        changed = False
        width = max(len(r) for _, r in rows)
        for pos in reversed(range(width)):
            merged: dict[tuple[object, ...], tuple[int, list[frozenset[str]]]] = {}
            for first, toks in rows:
                if pos >= len(toks):  # too short to vary here: kept as it is
                    merged[("short", first)] = (first, toks)
                    continue
                key = (len(toks), *toks[:pos], *toks[pos + 1 :])
                hit = merged.get(key)
                if hit is None:
                    merged[key] = (first, list(toks))
                else:
                    hit[1][pos] = hit[1][pos] | toks[pos]
                    changed = True
            rows = list(merged.values())  # in order of each pattern's first name
    return [".".join(_alternatives(t) for t in toks) for _, toks in rows]


def _alternatives(values: frozenset[str]) -> str:
    """`x`, `{a,b}`, `{0..59}`, `{0..3,7}`; at most 8 alternatives spelled out."""
    if len(values) == 1:
        return next(iter(values))
    if all(v.isdigit() and (v == "0" or not v.startswith("0")) for v in values):
        nums = sorted(int(v) for v in values)
        runs: list[list[int]] = []
        for n in nums:
            if runs and n == runs[-1][-1] + 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        return "{" + ",".join(_run(r) for r in runs) + "}"
    items = sorted(values)
    shown = items[:8] + ([f"…+{len(items) - 8}"] if len(items) > 8 else [])
    return "{" + ",".join(shown) + "}"


def _run(run: list[int]) -> str:
    """`7`, `7,8`, `0..59`: ranges from three numbers on."""
    if len(run) < 3:
        return ",".join(map(str, run))
    return f"{run[0]}..{run[-1]}"
