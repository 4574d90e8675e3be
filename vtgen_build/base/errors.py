"""The one error type of vtgen_build, and the location every record carries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Location", "Replacement", "VtgenError", "closest", "did_you_mean", "misspelled"]


@dataclass(frozen=True, order=True)
class Location:
    """A place in an input file: the path as the user gave it and a 1-based line."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Replacement:
    """A did-you-mean as a fix: the word ``old`` at the error's line reads ``new``."""

    old: str
    new: str


class VtgenError(Exception):
    """Bad input or a failed step, printed as ``path:line: error: message``; ``fix`` is its did-you-mean."""

    def __init__(self, message: str, location: Location | None = None, fix: Replacement | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location
        self.fix = fix

    def __str__(self) -> str:
        if self.location is None:
            return f"error: {self.message}"
        return f"{self.location}: error: {self.message}"

    def at(self, location: Location) -> VtgenError:
        """The same error, placed at ``location`` unless it already has a place."""
        if self.location is not None:
            return self
        return VtgenError(self.message, location, self.fix)


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice closest to ``word``, or None when none is close."""
    import difflib  # only on the error path: the no-op `generate` path stays light

    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``; did you mean 'x'?`` suffix naming the closest choice, or ``''``."""
    close = closest(word, choices)
    return f"; did you mean '{close}'?" if close else ""


def misspelled(message: str, word: str, choices: Iterable[str], location: Location | None) -> VtgenError:
    """``message`` with a did-you-mean for ``word``, whose replacement the error carries as its fix."""
    close = closest(word, choices)
    if close is None:
        return VtgenError(message, location)
    return VtgenError(f"{message}; did you mean '{close}'?", location, Replacement(word, close))
