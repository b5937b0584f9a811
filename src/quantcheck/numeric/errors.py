"""The one exception type raised by the numeric codecs (importable without numpy)."""

from __future__ import annotations


class NumericError(ValueError):
    """Input that a codec refuses: bad shape or option, or values that would store NaN."""
