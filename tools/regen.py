"""Regenerate the files derived from the rule registry: rules/codes.py and docs/rules.md.

Run `make regen` (or `python tools/regen.py`) after adding or changing a rule; the tests
(test_rule_constants, the docs test) fail until these are current.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def regen_codes() -> None:
    """Declare every registry code in rules/codes.py (lazy form) and list it in __all__."""
    sys.path.insert(0, str(ROOT / "src"))
    from quantcheck.rules.registry import all_rules

    path = ROOT / "src" / "quantcheck" / "rules" / "codes.py"
    text = path.read_text()
    text = re.sub(r'^(QC\d{3}): Rule = _RULES\["QC\d{3}"\]', r"\1: Rule", text, flags=re.M)
    rules = all_rules()
    head = text[: text.index("QC101: Rule")]
    decls = "".join(f"{c}: Rule  # {r.name}\n" for c, r in rules.items())
    names = "".join(f'    "{c}",\n' for c in rules)
    homes = "".join(_home_entry(m, cs) for m, cs in catalog_homes(rules).items())
    path.write_text(
        head + decls + "\n__all__ = [\n" + names + "]\n\n"
        "#: the catalog module that holds each code (a code binds by importing only its catalog)\n"
        "_HOMES = {\n" + homes + "}\n"
    )


def _home_entry(module: str, codes: list[str]) -> str:
    """One `_HOMES` entry: the codes as one string, cut into lines of at most 12 codes."""
    lines = [" ".join(codes[i : i + 12]) for i in range(0, len(codes), 12)]
    parts = "".join(
        f'        "{line}{" " if i < len(lines) - 1 else ""}"\n' for i, line in enumerate(lines)
    )
    return f'    "{module}": (\n{parts}    ),\n'


def catalog_homes(rules: dict[str, object]) -> dict[str, list[str]]:
    """catalog module -> the codes its RULES hold, in registry order."""
    import sys as _sys

    homes: dict[str, list[str]] = {}
    for code, rule in rules.items():
        home = next(
            m
            for m, mod in sorted(_sys.modules.items())
            if m.endswith(".catalog") and rule in getattr(mod, "RULES", ())
        )
        homes.setdefault(home, []).append(code)
    return homes


def regen_docs() -> None:
    """docs/rules.md from `quantcheck rules --output-format markdown`."""
    out = subprocess.run(
        [sys.executable, "-m", "quantcheck", "rules", "--output-format", "markdown"],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""},
    ).stdout
    (ROOT / "docs" / "rules.md").write_text(out)


if __name__ == "__main__":
    regen_codes()
    regen_docs()
