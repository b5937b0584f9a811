"""Known runtime error messages as patterns mapped to rules: how a pattern is made, matched and
explained. Each runtime's own messages are in its rule folder (`rules/<runtime>/messages.py`,
named by its record's `messages`), read in registration order on first use."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from quantcheck._record import factory, record
from quantcheck.explain.template import Line, Template
from quantcheck.rules.registry import Rule
from quantcheck.textsafe import clean

#: a pattern's code(s) from the values its message names: one code, or one per defect named
Refine = Callable[[dict[str, str]], "str | tuple[str, ...]"]


@record
class MessagePattern:
    """One runtime message template: its matcher, runtime, the rule it maps to, causes."""

    runtime: str
    template: str
    matcher: Template
    code: str
    causes: tuple[str, ...]
    fix_command: str = "quantcheck fix IN.safetensors -o OUT.safetensors --target sglang"
    refine: Refine | None = None  # the code(s), from the message's values
    check_target: str = ""  # `--target` for the hint (default: the runtime's name)

    def codes_for(self, values: dict[str, str]) -> tuple[str, ...]:
        """The rules the message points to (the first is the main one), given its values."""
        codes = self.refine(values) if self.refine else self.code
        return (codes,) if isinstance(codes, str) else codes


@record
class MessageMatch:
    """A pasted message matched to a pattern, with the values it names."""

    pattern: MessagePattern
    values: dict[str, str] = factory(dict)

    @property
    def codes(self) -> tuple[str, ...]:
        """Every rule the message points to: one per defect it names (the first is the main)."""
        return self.pattern.codes_for(self.values)

    @property
    def code(self) -> str:
        return self.codes[0]

    @property
    def fix_command(self) -> str:
        """The `quantcheck fix` line that repairs the main rule: with --unsafe-fixes where its
        fix changes numbers, "" where quantcheck has no automatic fix for it."""
        from quantcheck.rules.levels import Safety
        from quantcheck.rules.registry import get_rule

        safety = get_rule(self.code).fix
        if safety is None or safety is Safety.DISPLAY:
            return ""
        unsafe = " --unsafe-fixes" if safety is Safety.UNSAFE else ""
        return self.pattern.fix_command + unsafe

    def to_json(self) -> dict[str, Any]:
        from quantcheck.rules.registry import get_rule

        rule = get_rule(self.code)
        return {
            "matched": True,
            "runtime": self.pattern.runtime,
            "template": self.pattern.template,
            "values": self.values,
            "code": rule.code,
            "codes": list(self.codes),
            "name": rule.name,
            "causes": list(self.pattern.causes),
            "fix": rule.remedy,
            "fix_command": self.fix_command or None,
            "guess": "[GUESS]" in rule.evidence,
        }

    def render(self) -> str:
        from quantcheck.rules.registry import get_rule

        rule = get_rule(self.code)
        lines = [f"This is {self.pattern.runtime}'s message:", f"  {self.pattern.template}", ""]
        for k, v in self.values.items():
            lines.append(f"  {k}: {clean(v)}")
        others = [get_rule(c) for c in self.codes[1:]]
        lines += ["", f"Rule: {rule.code} {rule.name} — {rule.title}"]
        lines += [f"Also: {r.code} {r.name} — {r.title}" for r in others]
        lines += ["", "Common causes:", *(f"  - {c}" for c in self.pattern.causes)]
        target = self.pattern.check_target or self.pattern.runtime.split()[0].lower()
        lines += ["", f"Fix: {rule.remedy}", *(f"  and {r.code}: {r.remedy}" for r in others)]
        explains = " and ".join(f"`quantcheck explain {c}`" for c in self.codes)
        command = self.fix_command or "(quantcheck has no automatic fix for it)"
        lines += [
            f"  {command}",
            "",
            f"See {explains} for the full rule{'s' if others else ''}, and "
            f"`quantcheck check --target {target} FILE` to find every such layer at once.",
        ]
        if "[GUESS]" in rule.evidence:
            lines += [
                "",
                "Note: part of this rule's model of the release is a guess, not "
                f"verified by running it: {rule.evidence}",
            ]
        return "\n".join(lines)


def pattern(
    template: str,
    rule: Rule,
    *causes: str,
    runtime: str,
    refine: Refine | None = None,
    target: str = "",
) -> MessagePattern:
    """A `runtime`'s message `template` pointing to `rule` (or to what `refine` picks from its
    values), with its common causes; `target`: the `--target` its fix and check hints name
    (default: the runtime's first word)."""
    matcher = Template(template)
    if not target:
        return MessagePattern(runtime, template, matcher, rule.code, causes, refine=refine)
    fix = f"quantcheck fix IN.safetensors -o OUT.safetensors --target {target}"
    return MessagePattern(runtime, template, matcher, rule.code, causes, fix, refine, target)


#: longest line the matcher sees whole; a longer line is searched in overlapping windows of
#: twice this, so any message up to MAX_LINE characters is still found wherever it sits.
MAX_LINE = 2000
_ALL: list[Any] = [-1, [], None]  # [registry generation, patterns, leads regex]


def all_patterns() -> list[MessagePattern]:
    """Each registered runtime's own patterns (`Runtime.messages`), in registration order (an
    earlier pattern wins when two match)."""
    return _all()[0]


def _all() -> tuple[list[MessagePattern], re.Pattern[str]]:
    from quantcheck.runtimes import load, registry, runtimes

    if _ALL[0] != registry.generation:
        pats: list[MessagePattern] = []
        for rt in runtimes():
            if rt.messages:
                pats.extend(load(rt.messages))
        leads = {re.escape(p.template.split("{", 1)[0]) for p in pats}
        _ALL[:] = [
            registry.generation,
            pats,
            re.compile("|".join(sorted(leads, key=len, reverse=True))),
        ]
    return _ALL[1], _ALL[2]


def _units(text: str) -> tuple[list[str], list[str]]:
    """(lines, adjacent line pairs) of `text`, whitespace collapsed, none over 2*MAX_LINE."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if len(line) <= 2 * MAX_LINE:
            lines.append(line)
        else:  # windows [k*MAX_LINE, (k+2)*MAX_LINE): every MAX_LINE-long stretch is in one
            lines.extend(
                line[k : k + 2 * MAX_LINE] for k in range(0, len(line) - MAX_LINE, MAX_LINE)
            )
    pairs = [
        f"{a} {b}"
        for a, b in itertools.pairwise(lines)
        if a and b and len(a) + len(b) < 2 * MAX_LINE
    ]
    return lines, pairs


def match_message(text: str) -> MessageMatch | None:
    """The first known message pattern found in `text` (a message, a traceback or a log).

    Work is linear in the text: it is cut into lines (long ones into windows) of at most
    2*MAX_LINE characters; only lines holding the literal start of some template are tried,
    and each template is matched in time linear in the line (`explain.template`). A message
    wrapped over two lines is found in the joined pair.
    """
    lines, pairs = _units(text)
    patterns, leads = _all()
    for units in (lines, pairs):
        candidates = [Line(u) for u in units if leads.search(u)]
        for p in patterns:
            for line in candidates:
                values = p.matcher.search(line)
                if values is not None:
                    return MessageMatch(p, values)
    return None
