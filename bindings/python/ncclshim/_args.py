"""Argument checks shared by the communicator layer: every value is checked against the C type
it becomes before any C function sees it (ctypes would wrap an int past the type silently),
and a wrong one raises TypeError or ValueError naming the argument and what was expected."""
import math
import numbers
import operator

INT_MAX = 2 ** 31 - 1
SIZE_MAX = 2 ** 64 - 1  # size_t, uintptr_t and a stream handle on the 64-bit targets


def _index(value):
    """An integer type's value as an exact int: operator.index refuses an __index__ that
    answers no int (a float, a str), and an int subclass is read as int (its own __index__
    or comparisons do not count)."""
    value = operator.index(value)
    return value if type(value) is int else int.__index__(value)


def integer(value, name, low, high):
    """value as an int in [low, high]: an int (or an integer type with __index__, such as
    NumPy's), never a bool."""
    if type(value) is not int:
        if isinstance(value, bool) or not hasattr(type(value), "__index__"):
            raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
        value = _index(value)
    if not low <= value <= high:
        raise ValueError("%s is %d; it must be in [%d, %d]" % (name, value, low, high))
    return value


def rank_in(value, name, nranks):
    """A rank of an nranks-rank communicator (root, peer)."""
    if type(value) is int and 0 <= value < nranks:
        return value
    if type(value) is not int and (isinstance(value, bool) or
                                   not hasattr(type(value), "__index__")):
        raise TypeError("%s must be an int rank, not %s" % (name, type(value).__name__))
    value = _index(value)
    if not 0 <= value < nranks:
        raise ValueError("%s is %d; a rank of this communicator is in [0, %d)"
                         % (name, value, nranks))
    return value


def seconds(value, name):
    """A finite number of seconds >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s must be a number of seconds, not %s" % (name, type(value).__name__))
    try:
        value = float(value)
    except OverflowError:  # an int past float's range: as unbounded as inf
        value = math.inf if value > 0 else -math.inf
    if not math.isfinite(value) or value < 0:
        raise ValueError("%s must be a finite number of seconds >= 0 (no wait is unbounded), "
                         "not %r" % (name, value))
    return value


def milliseconds(value, name="timeout"):
    """A timeout in seconds as the C side's int milliseconds (at most INT_MAX)."""
    return min(int(seconds(value, name) * 1000), INT_MAX)


def text(value, name):
    """A str for a C string: no NUL byte."""
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (name, type(value).__name__))
    if "\0" in value:
        raise ValueError("%s holds a NUL byte, which a C string cannot carry" % name)
    return value
