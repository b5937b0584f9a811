"""`quantcheck explain`: a rule's documentation, or a pasted runtime error matched to its rule."""

from __future__ import annotations

from typing import Any

from quantcheck.rules.registry import find_rule


def explain(text: str, as_json: bool = False) -> tuple[str, bool]:
    """The explanation for a code, rule name or runtime message; (text, found)."""
    rule = find_rule(text)
    if rule is not None:
        if as_json:
            return _dumps(_rule_json(rule)), True
        return rule.doc(), True
    from quantcheck.explain.messages import match_message

    match = match_message(text)
    if match is None:
        msg = (
            f"no rule or known runtime message matches {text.strip()[:200]!r}; "
            "`quantcheck rules` lists every code"
        )
        return (_dumps({"matched": False, "message": msg}) if as_json else msg), False
    if as_json:
        return _dumps(match.to_json()), True
    return match.render(), True


def _dumps(doc: dict[str, Any]) -> str:
    """`explain --output-format json`: the document behind schema_version, tool and kind."""
    from quantcheck.render.json_out import dumps

    return dumps("explain", doc)


def _rule_json(rule: Any) -> dict[str, Any]:
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity.value,
        "title": rule.title,
        "checks": rule.checks,
        "why": rule.why,
        "example": rule.example,
        "fix": rule.remedy,
        "fix_safety": rule.fix.value if rule.fix else None,
        "effects": {t: e.value for t, e in rule.runtime_effects().items()},
        "effect_range": {t: [e.value for e in r] for t, r in rule.effect_range().items()},
        "evidence": rule.evidence,
    }
