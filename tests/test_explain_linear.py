"""`quantcheck explain` is linear in the paste for every template (issue 21 K): the work of
matching each template against hostile lines (one character repeated, the template's own
fragments repeated, a message that never ends) grows in proportion to the line, not faster,
and `match_message` takes no longer per character on a long line than on a short one."""

from __future__ import annotations

import string
import time

import pytest

from quantcheck.explain import messages
from quantcheck.explain.messages import MessagePattern, all_patterns
from quantcheck.explain.template import Line, Template

SMALL, LARGE = 5_000, 20_000  # 4x the input: linear work grows ~4x, quadratic 16x


def _filled(template: str) -> str:
    """The template with every field given a short value of its kind."""
    out = []
    for literal, name, conv, _ in string.Formatter().parse(template):
        out.append(literal)
        if name is None:
            continue
        out.append("'x'" if conv == "r" else "(8, 1)" if name.endswith("_shape") else "x")
    return "".join(out)


def _shapes(template: str) -> dict[str, str]:
    """Hostile units for one template, each a repeated piece (repeat it to any length)."""
    pieces = [lit for lit, _, _, _ in string.Formatter().parse(template) if lit]
    filled = _filled(template)
    shapes = {
        "backticks": "`",
        "single quotes": "'",
        "double quotes": '"',
        "one letter": "x",
        "open brackets": "(",
        "shape list": "(8, 1), ",
        "every fragment": "x".join(pieces),
        "message without its end": filled[: max(1, len(filled) - 1)],
        "message start then quote": filled[: len(filled) // 2] + "'",
    }
    for k, piece in enumerate(pieces):
        shapes[f"fragment {k}"] = piece
    return shapes


def _repeat(piece: str, size: int) -> str:
    return " ".join((piece * (size // len(piece) + 1))[:size].split())  # as `_units` sees it


def _steps(matcher: Template, text: str) -> int:
    line = Line(text)
    matcher.search(line)
    return line.steps


@pytest.mark.parametrize("pattern", all_patterns(), ids=lambda p: p.template[:50])
def test_matching_work_is_linear_in_the_line(pattern: MessagePattern) -> None:
    worst = []
    for name, piece in _shapes(pattern.template).items():
        small = _steps(pattern.matcher, _repeat(piece, SMALL))
        large = _steps(pattern.matcher, _repeat(piece, LARGE))
        worst.append((large / max(small, 1), name, small, large))
    ratio, name, small, large = max(worst)
    assert ratio < 8, f"{name!r}: {small} steps for {SMALL} chars, {large} for {LARGE}"
    assert large < 40 * LARGE, f"{name!r}: {large} steps for {LARGE} characters"


def test_step_count_sees_the_quadratic_shape() -> None:
    """The counter is not blind: a matcher that rescans from every start (the old regex's
    behaviour, modelled by a fresh `Line` per start) costs quadratic steps."""
    matcher = Template("a {x} and {y}")
    text = _repeat("a ", SMALL)
    rescans = sum(_steps(matcher, text[i:]) for i in range(0, len(text), 2))
    assert rescans > 100 * _steps(matcher, text)


def _best_time(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        messages.match_message(text)
        best = min(best, time.perf_counter() - t)
    return best


def test_match_message_time_grows_linearly_in_one_long_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the windows widened to the whole paste, `match_message` on a 4x longer hostile
    line takes well under 16x the time (a ratio of two sizes in one run, not a time)."""
    monkeypatch.setattr(messages, "MAX_LINE", 10 * LARGE)
    pieces = [
        "`",
        "x",
        "'",
        "Comfy W4A8 layer 'x' has incompatible weight/scale shapes: (8, 1), ",
        "Comfy INT8 layer 'x' needs I8 weights and F32 scales, got ",
    ]
    small = sum(_best_time(_repeat(p, 4 * SMALL)) for p in pieces)
    large = sum(_best_time(_repeat(p, 4 * LARGE)) for p in pieces)
    assert large / small < 8, (small, large)


def test_templates_the_matcher_cannot_take_are_refused() -> None:
    for bad in ("{a}{b} x", "{a!r} starts with a repr", "{x_shape} first"):
        with pytest.raises(ValueError):
            Template(bad)
    assert Template("{a} leads, {b}").search(Line("one two leads, three")) == {
        "a": "one two",
        "b": "three",
    }
