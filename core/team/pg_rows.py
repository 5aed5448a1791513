"""Row codec of the team store's ``memories`` table, shared by its modules.

The column list every read selects (:data:`COLUMNS`), the conversion of a row to a
:class:`~bli_memory.core.models.Memory`, timestamps in the stores' ISO 8601 form, the
``tsvector`` / ``tsquery`` text built from the same terms as the embedded FTS5 index
(:mod:`bli_memory.core.memory.terms`: code identifiers stay whole), pgvector literals,
and :class:`View`, what one person sees of a tag.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.records import text_problem
from bli_memory.core.memory.terms import encode_term, terms
from bli_memory.core.models import Memory

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    import psycopg

    from bli_memory.core.memory.ranking import RankingConfig

__all__ = [
    "COLUMNS",
    "MAX_LEXEME_BYTES",
    "MAX_POSITION",
    "MAX_POSITIONS",
    "View",
    "ViewedBackend",
    "check_storable",
    "fold",
    "iso",
    "lexeme",
    "now",
    "row_to_memory",
    "tsquery",
    "tsvector",
    "vector_literal",
]

MAX_LEXEME_BYTES = 1000  # Postgres refuses lexemes of 2 KB and more
MAX_POSITIONS = 255  # tsvector keeps at most 256 positions per lexeme
MAX_POSITION = 16383

#: The columns every read of ``memories`` selects, in :func:`row_to_memory`'s order
#: (``owner_id`` last, index 15).
COLUMNS = (
    "seq, id, space, content, custom_id, metadata, source, session_id, created_at, updated_at, "
    "version, supersedes, state, forgotten_at, expires_at, owner_id"
)


def iso(value: datetime | None) -> str | None:
    """``value`` as the stores' UTC ISO 8601 with microseconds and ``Z`` (None stays None)."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now() -> datetime:
    """The current UTC time (aware)."""
    return datetime.now(UTC)


def fold(term: str) -> str:
    """Remove diacritics, as the embedded index's ``remove_diacritics 2`` does."""
    decomposed = unicodedata.normalize("NFKD", term)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)) or term


def lexeme(term: str) -> str | None:
    """The tsvector lexeme of one term, or None when it is empty or over
    :data:`MAX_LEXEME_BYTES` UTF-8 bytes."""
    encoded = encode_term(fold(term))
    if not encoded or len(encoded.encode("utf-8")) > MAX_LEXEME_BYTES:
        return None
    return encoded


def tsvector(text: str) -> str:
    """tsvector input for ``text``: one lexeme per term (identifiers whole), with positions.

    Built here rather than by ``to_tsvector`` because Postgres' parser splits
    ``snake_case``, ``eu-west-1`` and ``BLI-3580`` differently from the embedded
    index; the encoded terms contain only letters, digits and ``_``.
    """
    positions: dict[str, list[int]] = {}
    for pos, term in enumerate(terms(text), start=1):
        lex = lexeme(term)
        if lex is None:
            continue
        slot = positions.setdefault(lex, [])
        if len(slot) < MAX_POSITIONS:
            slot.append(min(pos, MAX_POSITION))
    return " ".join(f"'{lex}':{','.join(map(str, dict.fromkeys(p)))}" for lex, p in positions.items())


def tsquery(query_terms_: Sequence[str], op: str) -> str | None:
    """tsquery input joining the terms' lexemes with ``op`` (``&`` or ``|``); None without any."""
    lexemes = [lex for lex in (lexeme(t) for t in query_terms_) if lex]
    if not lexemes:
        return None
    return f" {op} ".join(f"'{lex}'" for lex in dict.fromkeys(lexemes))


def vector_literal(vector: Any) -> str:
    """pgvector input text (``[x,y,...]``) of a 1-d vector."""
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def row_to_memory(row: Sequence[Any]) -> Memory:
    """The :class:`Memory` of one row selected as :data:`COLUMNS`."""
    return Memory(
        id=str(row[1]),
        space=row[2],
        content=row[3],
        custom_id=row[4],
        metadata=dict(row[5] or {}),
        source=row[6],
        session_id=row[7],
        created_at=iso(row[8]) or "",
        updated_at=iso(row[9]) or "",
        version=int(row[10]),
        supersedes=str(row[11]) if row[11] else None,
        state=row[12],
        forgotten_at=iso(row[13]),
        expires_at=iso(row[14]),
    )


@dataclass(frozen=True)
class View:
    """What one person sees of a tag: the canonical space, its tags, whose rows."""

    canonical: str
    spaces: tuple[str, ...]
    readers: tuple[int, ...]  # owners whose rows this person reads (self first)
    writers: tuple[int, ...]  # owners whose rows this person may change (self first)


def check_storable(field: str, value: Any) -> None:
    """Refuse a value Postgres cannot store as text (:func:`text_problem`).

    Raises:
        InvalidInputError: naming ``field`` and the problem.
    """
    problem = text_problem(value)
    if problem:
        raise InvalidInputError(f"{field} {problem}")


class ViewedBackend:
    """What the team store's method modules (:mod:`~bli_memory.core.team.pg_search`,
    :mod:`~bli_memory.core.team.pg_writes`) use of
    :class:`~bli_memory.core.team.pg_store.PostgresBackend`, which defines it all.

    Declarations only, for the type checker: connections (``_conn``, ``_tx``), the
    person's view of a tag (``_view``), the person (``_me``), the device, the model
    (``embedder``, ``model_name``, ``_embed_one``) and the fusion weights.
    """

    if TYPE_CHECKING:
        device_id: str | None

        @property
        def model_name(self) -> str: ...

        @property
        def ranking(self) -> RankingConfig: ...

        @property
        def embedder(self) -> Any: ...

        def _conn(self, action: str) -> AbstractContextManager[psycopg.Connection[Any]]: ...

        def _tx(self, action: str) -> AbstractContextManager[psycopg.Connection[Any]]: ...

        def _view(self, conn: psycopg.Connection[Any], tag: str) -> View: ...

        def _me(self) -> int: ...

        def _embed_one(self, text: str) -> Any: ...
