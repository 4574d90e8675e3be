"""The one error type of vtgen_build, and the location every record carries."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Location", "VtgenError", "did_you_mean"]


@dataclass(frozen=True, order=True)
class Location:
    """A place in an input file: the path as the user gave it and a 1-based line."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class VtgenError(Exception):
    """Bad input or a failed step, printed as ``path:line: error: message``."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return f"error: {self.message}"
        return f"{self.location}: error: {self.message}"

    def at(self, location: Location) -> VtgenError:
        """The same error, placed at ``location`` unless it already has a place."""
        if self.location is not None:
            return self
        return VtgenError(self.message, location)


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``; did you mean 'x'?`` suffix naming the closest choice, or ``''``."""
    import difflib  # only on the error path: the no-op `generate` path stays light

    close = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
