"""``bli-memory-mcp memory search|save|recall``: a person's way to ask the memory directly.

- ``search QUERY``: what ``search_memory`` returns: the broad, ranked search an agent
  gets when it asks, with each hit's channels and cosine similarity.
- ``save TEXT``: what ``save_memory`` does: secrets masked first, one memory written to
  the space (identical text is not written twice). ``-`` reads the text from stdin.
- ``update ID TEXT``: what ``update_memory`` does: the memory's new content, secrets
  masked first; the old version stays as history. ``-`` reads the text from stdin.
- ``recall PROMPT``: what the prompt hook would inject for that prompt in this space,
  and why: the relevance gate's evidence (best cosine, term coverage, score against
  threshold) and the block itself. It runs the hook's own decision
  (:func:`bli_memory.core.hooks.prompt_recall.prompt_decision`) but writes nothing and
  knows no session, so nothing is left out as "already given". This answers the
  question of docs/hooks.md, "why did my prompt get nothing?".
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend

__all__ = ["add_parsers", "run"]

COMMANDS = ("search", "save", "update", "recall")


def add_parsers(sub: Any, limit_type: Callable[[str], int], id_type: Callable[[str], str]) -> None:
    """Add :data:`COMMANDS` to the ``memory`` command's subparsers."""
    p = sub.add_parser("search", help="ranked search of a space, as search_memory answers it")
    p.add_argument("query", help="words, identifiers or a question, quoted")
    p.add_argument("--space", help="container tag (default: this folder's)")
    p.add_argument("--limit", type=limit_type, default=10, help="how many, 1-100 (default 10)")
    p.add_argument("--json", action="store_true", help="JSON, with channels and each hit's similarity")
    p = sub.add_parser("save", help="remember one fact in a space, as save_memory does (secrets masked)")
    p.add_argument("text", help="the fact, quoted; - reads it from stdin (a file: < notes.txt)")
    p.add_argument("--space", help="container tag (default: this folder's)")
    p.add_argument("--json", action="store_true", help="the result as JSON")
    p = sub.add_parser("update", help="correct a memory: new content, the old version kept as history",
                       description="Write a new version of a memory. Each version has its own id: "
                       "the command prints the new one, and the old id still names the memory "
                       "(get and update follow it to the live version).")
    p.add_argument("id", type=id_type, help="the memory's id, of any of its versions (as list, "
                   "search and get show it)")
    p.add_argument("text", help="the new content, quoted; - reads it from stdin")
    p.add_argument("--space", help="container tag (default: this folder's)")
    p.add_argument("--json", action="store_true", help="the result as JSON")
    p = sub.add_parser("recall", help="what the prompt hook would inject for a prompt here, and why")
    p.add_argument("prompt", help="a prompt as you would type it to an agent, quoted")
    p.add_argument("--space", help="container tag (default: this folder's)")
    p.add_argument("--json", action="store_true", help="the gate's evidence and the block as JSON")


def _hit(h: Any) -> dict[str, Any]:
    return {
        "id": h.memory.id,
        "similarity": None if h.similarity is None else round(h.similarity, 4),
        "channels": list(h.channels),
        "content": h.memory.content,
    }


def _similarity(value: float | None) -> str:
    """The hit's cosine similarity as the MCP tools and the browser name it."""
    return "similarity  -  " if value is None else f"similarity {value:.2f}"



def run(args: argparse.Namespace, backend: MemoryBackend, space: str, out: Callable[[str], Any]) -> int:
    """Run one of :data:`COMMANDS`; returns the exit code.

    Raises:
        BliMemoryError: from the backend (the CLI prints it as one line, exit 1), or
            :class:`~bli_memory.core.errors.InvalidInputError` (reason ``disabled``) when
            saving into a space whose memory is switched off.
    """
    from bli_memory.core.memory.wire import record_of

    if args.cmd == "search":
        if not args.query.strip():
            from bli_memory.core.errors import InvalidInputError

            raise InvalidInputError("the query is empty: give the words to search for, e.g. "
                                    "bli-memory-mcp memory search \"deploy billing\"")
        res = backend.search(args.query, space=space, limit=args.limit)
        if args.json:
            out(json.dumps({"space": res.space, "hits": [_hit(h) for h in res.hits]},
                           ensure_ascii=False, indent=2) + "\n")
        else:
            from bli_memory.core.memory.retrieval import matched_in_words

            lines = [f"{h.memory.id}  {_similarity(h.similarity)}  {matched_in_words(h.channels):<26} "
                     f"{' '.join(h.memory.content.split())[:140]}" for h in res.hits]
            out("".join(line + "\n" for line in lines) or f"(nothing found in space {res.space})\n")
        return 0
    if args.cmd == "update":
        return _update(args, backend, space, out)
    if args.cmd == "save":
        from bli_memory.core.errors import InvalidInputError
        from bli_memory.core.memory.switches import is_enabled

        if not is_enabled(space):
            raise InvalidInputError(f"memory is switched off for {space} (or globally); nothing was saved. "
                                    "the enable_memory MCP tool switches it back on", reason="disabled")
        text = _text_argument(args.text)
        _check_size(text)  # with this command's advice; the backend masks secrets after it
        saved = backend.save(text, space=space, source="cli")
        if args.json:
            out(json.dumps({"status": saved.status, "space": saved.space, "masked": saved.masked,
                            "memory": record_of(saved.memory) if saved.memory else None},
                           ensure_ascii=False, indent=2) + "\n")
        else:
            verb = {"created": "saved", "duplicate": "already remembered (identical text)",
                    "updated": "saved"}.get(saved.status, saved.status)
            ident = f" {saved.memory.id}" if saved.memory else ""
            out(f"{verb}{ident} in space {saved.space}{_masked_note(saved.masked)}\n")
        return 0
    return _recall(args, backend, space, out)


def _text_argument(value: str) -> str:
    """The text argument, or stdin's text for ``-``.

    Raises:
        InvalidInputError: the text is empty (nothing is written).
    """
    import sys

    from bli_memory.core.errors import InvalidInputError

    if value == "-" and sys.stdin is None:
        raise InvalidInputError("- reads the text from stdin, and this process has none; nothing was written")
    text = sys.stdin.read() if value == "-" else value
    if not text.strip():
        raise InvalidInputError("the text is empty; nothing was written" +
                                (" (stdin gave nothing)" if value == "-" else ""))
    return text


def _check_size(text: str) -> None:
    """:func:`~bli_memory.core.memory.retrieval_writes.check_content_size`, with advice a
    person at a terminal can follow (the MCP tool's ``extract: true`` is not a flag here).

    Raises:
        InvalidInputError: the text is longer than a memory may be.
    """
    from bli_memory.core.memory.retrieval_writes import check_content_size

    check_content_size(text, advice="Save its durable facts, one memory each")


def _masked_note(n: int) -> str:
    """``"; 2 secrets masked"``, or "" for none."""
    return f"; {n} secret{'s' if n != 1 else ''} masked" if n else ""


def _update(args: argparse.Namespace, backend: MemoryBackend, space: str, out: Callable[[str], Any]) -> int:
    from bli_memory.core.memory.version_ids import version_note
    from bli_memory.core.memory.wire import record_of

    text = _text_argument(args.text)
    _check_size(text)  # with this command's advice, as for a save; the backend masks secrets
    res = backend.update(text, space=space, id=args.id, source="cli")
    masked = res.masked
    if args.json:
        out(json.dumps({"status": res.status, "masked": masked, "memory": record_of(res.memory),
                        "previous": record_of(res.previous)}, ensure_ascii=False, indent=2) + "\n")
        return 0
    note = _masked_note(masked)
    if res.status == "unchanged":
        out(f"unchanged: {res.memory.id} already says that{note}\n")
    else:
        out(f"updated {res.memory.id} to version {res.memory.version} in space {res.memory.space}"
            f" (version {res.previous.version} kept as history){note}\n")
    extra = version_note(args.id, res.memory, res.named)
    if extra:
        out(extra.strip() + "\n")
    return 0


def _recall(args: argparse.Namespace, backend: MemoryBackend, space: str, out: Callable[[str], Any]) -> int:
    from bli_memory.core.hooks.blocks import recall_block
    from bli_memory.core.hooks.prompt_recall import prompt_decision
    from bli_memory.core.hooks.trivial import is_trivial
    from bli_memory.core.memory.relevance import DIVERSE_THRESHOLD
    from bli_memory.core.settings import load_settings

    if is_trivial(args.prompt):
        if args.json:
            out(json.dumps({"reason": "trivial_prompt", "inject": [], "block": None}, indent=2) + "\n")
        else:
            out("skipped: a trivial prompt (ok, continue, a /command, under 12 characters): the hook "
                "does not search for it (docs/hooks.md)\n")
        return 0
    settings = load_settings()
    res, d = prompt_decision(backend, args.prompt, space=space, limit=settings.recall_limit,
                             floor=settings.similarity_floor)
    # The block as the hook gives it in a host session (session_known: the header says so).
    block = (recall_block(d.inject, space=res.space, budget=settings.recall_budget_chars, session_known=True)
             if d.inject else None)
    why = _gate_reason(d, floor=settings.similarity_floor, diverse=d.threshold == DIVERSE_THRESHOLD)
    if args.json:
        out(json.dumps({
            "space": res.space, "reason": d.reason, "why": why, "score": d.score, "threshold": d.threshold,
            "top": d.top, "coverage": round(d.coverage, 4), "floor": settings.similarity_floor,
            "session": "fresh", "inject": [_hit(h) for h in d.inject], "block": block,
        }, ensure_ascii=False, indent=2) + "\n")
        return 0
    out(f"space {res.space}\ngate: {d.reason}: {why}\n")
    if not block:
        out("nothing would be injected: no memory here bears on this prompt closely enough "
            "(docs/hooks.md, \"Why a prompt sometimes gets nothing\")\n")
        return 0
    out(f"would inject {len(d.inject)} memor{'y' if len(d.inject) == 1 else 'ies'} "
        f"({len(block)} characters) in a new session:\n{block}\n"
        "In a session that was already given these memories (at session start or for an "
        "earlier prompt), the hook leaves them out, and may inject nothing.\n")
    return 0


def _gate_reason(d: Any, *, floor: float, diverse: bool) -> str:
    """One sentence on the gate's two tests: the score against its threshold, and the best
    memory's cosine similarity against the floor (docs/hooks.md, "Why a prompt sometimes gets nothing")."""
    if d.reason == "no_hits":
        return "no memory of the space matched the prompt at all"
    bar = ", the bar of a space of mutually unlike memories" if diverse else ""
    parts = []
    if d.score is not None:
        rel = ">=" if d.score >= d.threshold else "<"
        parts.append(f"relevance score {d.score:.2f} {rel} threshold {d.threshold}{bar} (how strongly "
                     "the best memories bear on the prompt, from meaning and shared terms)")
    if d.top is not None:
        rel = ">=" if d.top >= floor else "<"
        parts.append(f"best cosine similarity {d.top:.2f} {rel} floor {floor} (the least likeness "
                     f"in meaning a memory needs, whatever its score); term coverage {d.coverage:.2f}")
    verdict = {"relevant": "both pass", "exact_keyword": "a memory holds every word or identifier of "
               "the prompt, which is enough on its own"}.get(d.reason, "a memory must pass both")
    return "; ".join(parts) + f": {verdict}" if parts else verdict
