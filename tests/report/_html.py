"""A strict-enough HTML check with html.parser: balanced tags, unique ids, resolvable links."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "wbr", "source"}
#: Elements whose end tag HTML lets the parser infer; we never rely on it, so none are listed.
SVG_SELF_CLOSING = {"rect", "stop", "path", "circle", "line"}


@dataclass
class Parsed:
    tags: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    hrefs: list[str] = field(default_factory=list)
    srcs: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = Parsed()
        self.stack: list[str] = []
        self._in_title = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attrs(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "title":
            self._in_title += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._attrs(tag, attrs)
        if tag not in VOID and tag not in SVG_SELF_CLOSING:
            self.out.errors.append(f"self-closing <{tag}/>")

    def _attrs(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out.tags.append(tag)
        for k, v in attrs:
            if k == "id":
                self.out.ids.append(v or "")
            elif k == "href":
                self.out.hrefs.append(v or "")
            elif k == "src":
                self.out.srcs.append(v or "")
            elif k == "title":
                self.out.titles.append(v or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.out.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag == "title":
            self._in_title -= 1

    def handle_data(self, data: str) -> None:
        (self.out.titles if self._in_title else self.out.text).append(data)


def parse(html: str) -> Parsed:
    """Parse `html`; `errors` lists unbalanced tags, duplicate ids and dangling #links."""
    assert html.startswith("<!DOCTYPE html>")
    c = _Checker()
    c.feed(html)
    c.close()
    p = c.out
    if c.stack:
        p.errors.append(f"unclosed: {c.stack}")
    seen: set[str] = set()
    for i in p.ids:
        if i in seen:
            p.errors.append(f"duplicate id {i!r}")
        seen.add(i)
    for h in p.hrefs:
        if h.startswith("#") and h[1:] not in seen:
            p.errors.append(f"dangling link {h}")
    return p
