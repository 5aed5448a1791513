"""What an extractor returns: the :class:`Statement`, its kinds and the :class:`Extractor` protocol.

Every extractor (the built-in ones of :mod:`bli_memory.core.extraction.extractors` and any
plugin's) turns raw conversation text into a list of :class:`Statement`. Standard library
only: plugin modules and the worker import it without paying for the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["KINDS", "MAX_STATEMENTS", "MAX_STATEMENT_CHARS", "Extractor", "Statement", "StatementKind"]

StatementKind = Literal["decision", "preference", "convention", "fact", "command", "fix"]

#: Every kind a statement can have; stored as the memory's ``metadata.kind``.
KINDS: tuple[str, ...] = ("decision", "preference", "convention", "fact", "command", "fix")

#: Longest statement kept, in characters; longer "sentences" are pasted logs or code.
MAX_STATEMENT_CHARS = 500

#: Most statements one text yields (a pasted document must not flood the space).
MAX_STATEMENTS = 24


@dataclass(frozen=True)
class Statement:
    """One atomic statement worth keeping.

    Attributes:
        text: Self-contained sentence, as it will be stored.
        kind: One of :data:`KINDS`; ``preference``, ``convention`` and ``decision``
            feed the User Profile.
        subject: What the statement is about ("the package manager"), when the
            extractor names it (a model does; the rules do not).
        source: The sentence of the conversation it came from, when given.
        outdates: An earlier claim this statement makes stale ("The default format is
            'md'."), when the extractor says so; reconcile supersedes a live memory
            that says it only on the same subject
            (:func:`bli_memory.core.extraction.reconcile.distil`).
    """

    text: str
    kind: StatementKind = "fact"
    subject: str | None = None
    source: str | None = None
    outdates: str | None = None


class Extractor(Protocol):
    """What every extractor plugin's factory returns."""

    name: str

    def extract(self, text: str) -> list[Statement]:
        """Distil ``text`` (an exchange ``User: ...\\n\\nAssistant: ...`` or free text).

        Returns:
            The statements worth keeping, in order of appearance; empty when nothing
            is durable.

        Raises:
            BliMemoryError: the extractor could not run (for example
                :class:`~bli_memory.core.errors.ServiceError` when a model endpoint
                fails); the worker retries the job later.
        """
        ...
