"""Escaping text that came from a file, a server or a paste before a terminal or CI log sees it.

Tensor names, metadata, URLs and runtime messages are untrusted: raw ESC/BEL would let a
hostile checkpoint retitle the terminal or clear the screen, a raw newline would forge a
`0 errors` line or a `::error` workflow command, and bidi overrides or line separators would
make a name display as something else. `clean(s)` spells every such character as a Python-style
escape (`\\x1b`, `\\n`, `\\u202e`), so the text stays on one line and reads the same everywhere.
`json_safe(doc)` does the same inside JSON text, where `json.dumps(ensure_ascii=False)` escapes
C0 controls but passes DEL, C1 controls, line separators and bidi controls through raw.

Escaped: C0 controls (U+0000-U+001F, tab and newline included), DEL, C1 controls
(U+0080-U+009F), U+2028/U+2029, the bidi embeddings, overrides, isolates and marks (U+061C,
U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), and lone surrogates.
"""

from __future__ import annotations

import re
import sys

#: characters never written raw to a human-readable output (none of them is printable, so
#: `str.isprintable()` is a fast path past the regex, which is compiled on first use: 1-2 ms
#: of start-up otherwise).
UNSAFE_PATTERN = (
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
#: the same without C0 controls: what `json.dumps` leaves raw (its indentation newlines are C0).
_JSON_UNSAFE_PATTERN = (
    "[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def __getattr__(name: str) -> re.Pattern[str]:
    """`UNSAFE`: the compiled pattern (compiled on first use)."""
    if name == "UNSAFE":
        return re.compile(UNSAFE_PATTERN)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: an SGR colour sequence (`ESC [ 1;31 m`): the only escape sequence a block of rendered
#: text may keep (the renderers add it around text already escaped with `clean`).
_SGR = "\x1b\\[[0-9;]*m"

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _spell(ch: str) -> str:
    named = _NAMED.get(ch)
    if named:
        return named
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def clean(text: object) -> str:
    """`text` as one line with every control, separator and bidi character escaped."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable() or re.search(UNSAFE_PATTERN, s) is None:  # escaped ones are unprintable
        return s
    return re.sub(UNSAFE_PATTERN, lambda m: _spell(m.group()), s)


def json_safe(doc: str) -> str:
    """JSON text with the characters above written as `\\uXXXX` escapes (same JSON value).

    Only valid for JSON produced by `json.dumps`: outside strings it is pure ASCII, and inside
    strings C0 controls are already escaped, so only the others can appear raw.
    """
    if doc.isascii() or re.search(_JSON_UNSAFE_PATTERN, doc) is None:
        return doc
    return re.sub(_JSON_UNSAFE_PATTERN, lambda m: f"\\u{ord(m.group()):04x}", doc)


_USERINFO = r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@"


def redact_url(location: str) -> str:
    """`location` as it may be printed or stored: a URL loses its credentials and secrets.

    `scheme://user:pass@host/...` keeps only `***@`; the whole query and fragment become `?…`
    and `#…` (not in `hf://` addresses, which have no query: there `?` and `#` belong to a file
    name). The whole query goes, not just parameters that look like secrets: signed CDN
    and object-store URLs carry them under any name (`X-Amz-Signature`, `Signature`, `Policy`,
    `sig`, `token`, ...), and no name list can be complete. Local paths come back unchanged.
    """
    if "://" not in location:
        return location
    head = re.sub(_USERINFO, r"\1***@", location)
    if head[:5].lower() == "hf://":  # no query there: `?`, `#` in a hub file name are data
        return head
    path, hash_, _ = head.partition("#")
    path, query, _ = path.partition("?")
    return path + ("?…" if query else "") + ("#…" if hash_ else "")


def clean_block(text: object) -> str:
    """Rendered multi-line text with every unsafe character escaped except its line breaks
    (and the SGR colour sequences a renderer adds): no ESC, BEL, CR, C1 control or bidi
    override reaches the terminal, whatever a renderer forgot."""
    s = text if isinstance(text, str) else str(text)
    if s.isascii() and s.replace("\n", "").isprintable():
        return s
    return re.sub(
        f"({_SGR})|(?!\n){UNSAFE_PATTERN}",
        lambda m: m.group(1) or _spell(m.group()),
        s,
    )


def say(message: object = "", *, err: bool = False) -> None:
    """Print one line to stdout (or stderr): the whole line escaped with `clean`, so nothing
    in it (a file name, a server's answer, an exception) can start another line, forge a
    `::error` workflow command or send a terminal escape."""
    print(clean(message), file=sys.stderr if err else sys.stdout)


def say_error(message: object) -> None:
    """`quantcheck: error: MESSAGE` on stderr, escaped as `say` escapes."""
    say(f"quantcheck: error: {message}", err=True)


def say_warning(message: object) -> None:
    """`quantcheck: warning: MESSAGE` on stderr, escaped as `say` escapes."""
    say(f"quantcheck: warning: {message}", err=True)


def say_block(text: object, *, end: str = "\n") -> None:
    """Print rendered multi-line text (a table, a report, JSON) to stdout via `clean_block`."""
    sys.stdout.write(clean_block(text))
    sys.stdout.write(end)  # a second write, as `print` does: a closed pipe shows here
