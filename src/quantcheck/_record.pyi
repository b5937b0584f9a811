"""Type-checker view of `_record.py`: `@record` is a dataclass transform.

Run time never reads this file (the check path imports no `typing`); mypy and other checkers
read it instead of `_record.py`, so `@record` classes get a typed `__init__`, `__eq__` and
`__match_args__`, and `factory(list)` types as the value it makes.
"""

from collections.abc import Callable
from typing import TypeVar, dataclass_transform, overload

_T = TypeVar("_T")
_C = TypeVar("_C", bound=type)

def factory(make: Callable[[], _T]) -> _T:
    """A default made fresh for each instance (a class at run time)."""

@overload
@dataclass_transform(eq_default=True)
def record(cls: _C) -> _C:
    """Add `__init__` (fields in annotation order), `__repr__`, `__eq__` and `__hash__`."""

@overload
def record(*, slots: bool = False) -> Callable[[_C], _C]:
    """`slots=True`: instances have `__slots__` and no `__dict__`."""
