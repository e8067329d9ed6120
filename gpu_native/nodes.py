"""Immutable record classes (the syntax tree, the IR, cache and runtime records), made without
generated code.

``@node`` gives a class what ``@dataclass(frozen=True)`` gives it (an ``__init__`` over the
annotated fields, bases' fields first, with defaults; ``__repr__``; value ``__eq__`` and
``__hash__``; assignment refused) and :func:`fields` / :func:`replace` stand in for the
``dataclasses`` functions.  The difference is cost: ``dataclasses`` compiles five or six functions
from source for every class, which for the ~130 syntax and IR classes was 68 ms of a cold start on
the H200 (Python 3.12), a tenth of the time to the first result; here every class shares the same
few functions, which read the field names from the class.
"""

from __future__ import annotations

from collections.abc import Callable
from inspect import get_annotations
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    # Type checkers bundle typing_extensions; Python 3.10's typing lacks dataclass_transform.
    from typing_extensions import dataclass_transform
else:
    def dataclass_transform(**_options):
        """Stands in for ``typing.dataclass_transform`` (3.11+): it only informs type checkers."""
        return lambda decorator: decorator

__all__ = ["Factory", "FrozenNodeError", "fields", "is_node", "node", "replace"]

_MISSING = object()


class FrozenNodeError(AttributeError):
    """Assignment to a field of a frozen node (``dataclasses.FrozenInstanceError``'s role)."""


_T = TypeVar("_T")


class _Factory:
    """A default made fresh for each instance (``field(default_factory=...)``)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


if TYPE_CHECKING:
    def Factory(make: Callable[[], _T], /) -> _T:
        """A default made fresh for each instance (``field(default_factory=...)``).

        To a type checker the default is a value of ``make``'s result type, the way
        ``dataclasses.field(default_factory=...)`` is typed: every instance gets ``make()``.
        """
        ...
else:
    Factory = _Factory


def _bind(cls, args: tuple, kwargs: dict) -> list:
    """The field values of ``cls(*args, **kwargs)`` in order, with the errors a call gives."""
    names = cls.__node_fields__
    if len(args) > len(names):
        raise TypeError(f"{cls.__name__}() takes {len(names)} positional arguments but "
                        f"{len(args)} were given")
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {key!r}")
        if key in values:
            raise TypeError(f"{cls.__name__}() got multiple values for argument {key!r}")
        values[key] = value
    defaults = cls.__node_defaults__
    out = []
    for name in names:
        value = values.get(name, _MISSING)
        if value is _MISSING:
            value = defaults.get(name, _MISSING)
            if value is _MISSING:
                raise TypeError(f"{cls.__name__}() missing required argument {name!r}")
            if type(value) is _Factory:
                value = value.make()
        out.append(value)
    return out


def _init(self, *args, **kwargs) -> None:
    cls = type(self)
    if kwargs or len(args) != len(cls.__node_fields__):
        self.__dict__.update(zip(cls.__node_fields__, _bind(cls, args, kwargs)))
    else:
        self.__dict__.update(zip(cls.__node_fields__, args))


def _repr(self) -> str:
    d = self.__dict__
    inner = ", ".join(f"{name}={d[name]!r}" for name in type(self).__node_fields__)
    return f"{type(self).__qualname__}({inner})"


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    d, o = self.__dict__, other.__dict__
    return all(d[name] == o[name] for name in type(self).__node_fields__)


def _hash(self) -> int:
    d = self.__dict__
    return hash(tuple([d[name] for name in type(self).__node_fields__]))


def _refuse_set(self, name, value):
    raise FrozenNodeError(f"cannot assign to field {name!r}")


def _refuse_del(self, name):
    raise FrozenNodeError(f"cannot delete field {name!r}")


@dataclass_transform(frozen_default=True)
def node(cls=None, /, *, eq: bool = True, frozen: bool = True):
    """Make ``cls`` a record of its annotated fields (see the module docstring).

    ``eq=False`` keeps identity equality (two variables with one name are two variables);
    ``frozen=False`` allows assignment (then, with ``eq``, instances are unhashable, as with
    ``dataclass``).  A method the class defines itself is kept.
    """
    def wrap(cls):
        names: list[str] = []
        defaults: dict = {}
        for base in reversed(cls.__mro__[1:]):
            for name in base.__dict__.get("__node_fields__", ()):
                if name not in names:
                    names.append(name)
            defaults.update(base.__dict__.get("__node_defaults__", {}))
        for name in get_annotations(cls):
            if name not in names:
                names.append(name)
            if name in cls.__dict__:
                defaults[name] = cls.__dict__[name]
            else:
                defaults.pop(name, None)
        seen_default = None
        for name in names:
            if name in defaults:
                seen_default = name
            elif seen_default is not None:
                raise TypeError(f"{cls.__name__}: non-default field {name!r} follows default "
                                f"field {seen_default!r}")
        cls.__node_fields__ = tuple(names)
        cls.__node_defaults__ = defaults
        own = cls.__dict__
        methods: dict[str, Callable[..., Any] | None] = {"__init__": _init, "__repr__": _repr}
        if eq:
            methods["__eq__"] = _eq
            methods["__hash__"] = _hash if frozen else None
        if frozen:
            methods["__setattr__"] = _refuse_set
            methods["__delattr__"] = _refuse_del
        for name, method in methods.items():
            if name not in own:
                setattr(cls, name, method)
        return cls

    return wrap if cls is None else wrap(cls)


def is_node(obj) -> bool:
    """Whether ``obj`` is an instance of a ``@node`` class."""
    return hasattr(type(obj), "__node_fields__")


def fields(obj) -> tuple[str, ...]:
    """The field names of a node (or node class), bases' first."""
    return obj.__node_fields__


def replace(obj, **changes):
    """A copy of node ``obj`` with the given fields changed."""
    cls = type(obj)
    for name in changes:
        if name not in cls.__node_fields__:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
    new = object.__new__(cls)
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new
