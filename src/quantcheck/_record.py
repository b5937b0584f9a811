"""`@record`: a minimal dataclass for the check path.

`dataclasses` imports `inspect` (and `ast`, `dis`, ...), about a quarter of a CLI run's start-up;
this generates the same `__init__`, `__repr__` and `__eq__` from the class annotations with
nothing but builtins. Defaults are class attributes; `factory(list)` gives a fresh value per
instance; a `__post_init__` method, if defined, runs last. `@record(slots=True)` makes a class
whose instances have `__slots__` and no `__dict__` (about a third of the memory: for records made
by the hundred thousand, such as diagnostics).
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs start-up time; annotations are strings here
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T", bound=type)
_MISSING: Any = object()


class factory:
    """A default made fresh for each instance."""

    __slots__ = ("make",)

    def __init__(self, make: Any) -> None:
        self.make = make


def record(cls: T | None = None, *, slots: bool = False) -> Any:
    """Add `__init__` (fields in annotation order), `__repr__`, `__eq__` and `__hash__`; with
    `slots=True` the class is remade with `__slots__` (its defaults live in `__init__`)."""
    if cls is None:
        return lambda c: _record(c, slots)
    return _record(cls, slots)


def _record(cls: T, slots: bool) -> T:
    names = [
        n
        for n, a in cls.__dict__.get("__annotations__", {}).items()  # noqa: RUF063
        if not str(a).startswith("ClassVar")
    ]
    env: dict[str, Any] = {"_MISSING": _MISSING}
    params, body = [], []
    for n in names:
        if n in cls.__dict__:
            d = cls.__dict__[n]
            if isinstance(d, factory):
                env[f"_f_{n}"] = d.make
                params.append(f"{n}=_MISSING")
                body.append(f"    self.{n} = _f_{n}() if {n} is _MISSING else {n}")
                delattr(cls, n)
            else:
                env[f"_d_{n}"] = d
                params.append(f"{n}=_d_{n}")
                body.append(f"    self.{n} = {n}")
        else:
            params.append(n)
            body.append(f"    self.{n} = {n}")
    if "__post_init__" in cls.__dict__:
        body.append("    self.__post_init__()")
    src = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    exec(src, env)
    fields = tuple(names)

    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in fields)
        return f"{type(self).__name__}({inner})"

    def __eq__(self: Any, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in fields)

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in fields))

    if slots:
        ns = {
            k: v
            for k, v in cls.__dict__.items()
            if k not in fields and k not in ("__dict__", "__weakref__")
        }
        ns["__slots__"] = fields
        cls = type(cls)(cls.__name__, cls.__bases__, ns)
    cls.__init__ = env["__init__"]  # type: ignore[misc]
    cls.__repr__ = __repr__  # type: ignore[method-assign, assignment]
    cls.__eq__ = __eq__  # type: ignore[method-assign, assignment]
    cls.__hash__ = __hash__  # type: ignore[method-assign, assignment]
    cls.__match_args__ = fields  # type: ignore[attr-defined]
    return cls
