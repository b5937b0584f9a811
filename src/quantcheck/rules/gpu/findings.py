"""Known bad device combinations as findings (issue 24 item 4): placeholder replaced below."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def known_issues(ck: Any, keys: tuple[str, ...], specs: list[Any]) -> list[Any]:
    return []
