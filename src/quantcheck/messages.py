"""Known runtime error messages (sglang 0.5.23, ComfyUI) as patterns mapped to rules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MessagePattern:
    """One runtime message template: its regex, runtime, the rule it maps to, causes."""

    runtime: str
    template: str
    regex: re.Pattern[str]
    fields: tuple[str, ...]
    code: str
    causes: tuple[str, ...]
    fix_command: str = "quantcheck fix IN.safetensors -o OUT.safetensors --target sglang"


@dataclass
class MessageMatch:
    """A pasted message matched to a pattern, with the values it names."""

    pattern: MessagePattern
    values: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        from quantcheck.rules.registry import get_rule

        rule = get_rule(self.pattern.code)
        return {"matched": True, "runtime": self.pattern.runtime,
                "template": self.pattern.template, "values": self.values,
                "code": rule.code, "name": rule.name, "causes": list(self.pattern.causes),
                "fix": rule.remedy, "fix_command": self.pattern.fix_command}

    def render(self) -> str:
        from quantcheck.rules.registry import get_rule

        rule = get_rule(self.pattern.code)
        lines = [f"This is {self.pattern.runtime}'s message:", f"  {self.pattern.template}", ""]
        for k, v in self.values.items():
            lines.append(f"  {k}: {v}")
        lines += ["", f"Rule: {rule.code} {rule.name} — {rule.title}", "", "Common causes:"]
        lines += [f"  - {c}" for c in self.pattern.causes]
        lines += ["", f"Fix: {rule.remedy}", f"  {self.pattern.fix_command}", "",
                  f"See `quantcheck explain {rule.code}` for the full rule, and "
                  "`quantcheck check --target " + self.pattern.runtime.split()[0].lower()
                  + " FILE` to find every such layer at once."]
        return "\n".join(lines)


PATTERNS: list[MessagePattern] = []


def match_message(text: str) -> MessageMatch | None:
    """The first known message pattern matching `text` (searched anywhere in it)."""
    t = " ".join(text.split())
    for p in PATTERNS:
        m = p.regex.search(t)
        if m:
            return MessageMatch(p, {k: v for k, v in m.groupdict().items() if v is not None})
    return None
