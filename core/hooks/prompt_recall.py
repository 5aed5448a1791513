"""What the prompt hook would inject for one prompt, and why: search, term evidence, gate.

The prompt hook (:mod:`bli_memory.core.hooks.events`) and ``bli-memory-mcp memory recall``
(a person asking "why did this prompt get nothing?") run this one function, so the
command shows exactly the hook's decision. It reads only: the per-session state (what
was injected earlier in the session) is the caller's, passed in as ``skip_ids`` /
``skip_session``.

The rules themselves live in :mod:`bli_memory.core.memory.relevance` (the gate, its two
bars and their measurements) and :mod:`bli_memory.core.memory.term_evidence` (term
coverage); the search, the term counts and the space's background come from the backend's
``recall``, in one call (one request on the team service).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.memory.relevance import Decision
    from bli_memory.core.models import SearchResult

__all__ = ["MAX_QUERY_BYTES", "prompt_decision"]

#: A prompt is searched with at most this much of it (its beginning, UTF-8 bytes). The
#: embedding model reads its first 256 word pieces (about 1 KB of English), and the rest
#: of a pasted log or file adds keyword terms, not meaning: a 2.6 MB prompt took the direct
#: route of the prompt hook to 2.1 s, past its 2 s deadline, and 1.2 s cut to this
#: (100 KB took 1.0 s, 1 KB 0.9 s; one run each, cold process, embedded store).
MAX_QUERY_BYTES = 16 * 1024


def prompt_decision(
    backend: MemoryBackend,
    prompt: str,
    *,
    space: str,
    limit: int,
    floor: float,
    skip_ids: frozenset[str] | set[str] = frozenset(),
    skip_session: str | None = None,
) -> tuple[SearchResult, Decision]:
    """Search ``space`` for ``prompt`` and decide what would be injected.

    Args:
        backend: A :class:`~bli_memory.core.memory.backend.MemoryBackend`.
        prompt: The prompt as typed, with any block injected earlier already stripped;
            only its first :data:`MAX_QUERY_BYTES` are searched.
        space: Container tag searched.
        limit: Most memories injected (``BLI_MEMORY_RECALL_LIMIT``); the search asks for
            three times as many, so the gate sees the space around the best hits.
        floor: Lowest best cosine that may pass the gate (``BLI_MEMORY_SIMILARITY_FLOOR``).
        skip_ids: Memory ids never injected (given earlier in the session).
        skip_session: Memories captured in this host session are never injected.

    Returns:
        ``(search result, decision)``; ``decision.inject`` is empty when the prompt
        gets nothing, and ``decision.reason`` says why.

    Raises:
        BliMemoryError: whatever the backend's search raises (the hook fails open on it).
    """
    from bli_memory.core.memory.relevance import SMALL_SPACE, decide
    from bli_memory.core.memory.term_evidence import hit_coverage

    data = prompt.encode("utf-8", "surrogatepass")
    if len(data) > MAX_QUERY_BYTES:  # its beginning, whole characters only
        prompt = data[:MAX_QUERY_BYTES].decode("utf-8", "ignore")
    got = backend.recall(prompt, space=space, limit=limit * 3)
    result, background = got.result, got.background
    coverage = 0.0
    if result.hits:
        coverage = hit_coverage(list(got.term_counts), got.live, result.hits, small_space=SMALL_SPACE)
    decision = decide(
        result.hits, coverage=coverage, limit=limit, prompt=prompt, floor=floor,
        skip_ids=skip_ids, skip_session=skip_session, background=background,
    )
    if skip_ids or skip_session:
        # What the session already has: counted, so the receipt can say why a prompt on
        # the space's subject got nothing (or less).
        unskipped = decide(result.hits, coverage=coverage, limit=limit, prompt=prompt, floor=floor,
                           background=background)
        given = sum(1 for h in unskipped.inject
                    if h.memory.id in skip_ids or (skip_session and h.memory.session_id == skip_session))
        if given:
            from dataclasses import replace

            decision = replace(decision, given=given)
    return result, decision
