"""When a model says an earlier claim is stale, which live memory that retires, if any.

A model extractor may return a fact with ``outdates``: the earlier claim the session shows
is no longer true ("The export default format is 'md'."). Reconcile
(:func:`~bli_memory.core.extraction.reconcile.distil`) searches the space for that claim and
asks :func:`outdated_memory` whether its closest memory may be superseded. The subject comes
from the model, so it is never enough on its own: a change on one subject must not retire a
memory on another. Pure functions; the standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bli_memory.core.extraction.statement_terms import content_terms

if TYPE_CHECKING:
    from bli_memory.core.extraction.statements import Statement

__all__ = ["OUTDATED_SIMILARITY", "OUTDATED_TOPIC_SIMILARITY", "outdated_memory"]

#: Cosine similarity at which a live memory says the claim a model marked outdated: a
#: restatement of one claim by two writers scores well above it.
OUTDATED_SIMILARITY = 0.75
#: Least cosine similarity between the new statement and the memory it retires. Measured
#: with the shipped embedder: a change of the same fact scores 0.72-0.91 ("The export
#: command writes every format by default." / "The export default format is 'md'." 0.72,
#: "The API now listens on port 9443." / "... on port 8443." 0.91); a statement on another
#: subject that shares only its frame scores 0.26-0.28 ("The user prefers pytest fixtures
#: ..." / "The user prefers tabs over spaces ..."; "The project uses pnpm ..." / "The
#: project deploys to production only on Fridays ...").
OUTDATED_TOPIC_SIMILARITY = 0.5
#: Subject words that name who or what every memory is about, so they tell no subject apart.
_GENERIC_SUBJECT = frozenset({"user", "person", "project", "team", "we", "repo", "repository", "code",
                              "codebase", "app", "application", "system", "setup", "thing", "work"})


def outdated_memory(statement: Statement, content: str, claim: list[tuple[str, str, float]],
                    near: list[tuple[str, str, float]]) -> str | None:
    """The live memory ``statement.outdates`` names, when it is on the statement's subject.

    It is superseded only when all of these hold:

    - it is the closest live memory to the outdated claim (cosine >= :data:`OUTDATED_SIMILARITY`);
    - it is close to the new statement itself (cosine >= :data:`OUTDATED_TOPIC_SIMILARITY`);
    - the subject names at least one word that is not generic ("user", "project", ...), and
      the memory and the new statement both name every such word.

    Args:
        statement: The model's fact (its ``subject`` and ``outdates``).
        content: The statement as it will be stored.
        claim: ``(id, content, cosine)`` of the live memories closest to ``outdates``, best first.
        near: The same for the new statement's own search.

    Returns:
        The memory id, or None.
    """
    subject = frozenset(t for t in content_terms(statement.subject or "") if t not in _GENERIC_SUBJECT)
    if not subject or not subject <= content_terms(content) or not claim:
        return None
    mid, text, sim = claim[0]
    if sim < OUTDATED_SIMILARITY or not subject <= content_terms(text):
        return None
    if any(i == mid and s >= OUTDATED_TOPIC_SIMILARITY for i, _, s in near):
        return mid
    return None
