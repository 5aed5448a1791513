"""What both model extractors ask a model for, and how its answer becomes statements.

The ``openai`` extractor (:mod:`~bli_memory.core.extraction.chat_extractor`) and the
``host`` extractor (:mod:`~bli_memory.core.extraction.host_model`) send the same
instructions (:data:`INSTRUCTIONS`) and accept the same answer (:data:`FACTS_SCHEMA`):

``{"facts": [{"text", "subject", "kind", "source", "outdates"}]}``

- ``text``: one self-contained sentence, in the third person;
- ``subject``: what it is about, in a few words (reconcile supersedes an older memory only
  when that memory names the same subject);
- ``kind``: ``decision``, ``convention``, ``setup``, ``preference`` or ``cause``, stored
  as our kinds (:data:`MODEL_KINDS`);
- ``source``: the sentence of the conversation it came from;
- ``outdates``: an earlier claim the conversation shows is no longer true, or null.

Standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bli_memory.core.extraction.statements import KINDS, MAX_STATEMENT_CHARS, MAX_STATEMENTS, Statement

__all__ = ["FACTS_SCHEMA", "INSTRUCTIONS", "MODEL_KINDS", "json_in", "statements_from"]

#: The kinds a model is offered, and the kind each is stored as (``metadata.kind``):
#: ``setup`` facts are facts, a ``cause`` is a fix's reason.
MODEL_KINDS: dict[str, str] = {
    "decision": "decision",
    "convention": "convention",
    "setup": "fact",
    "preference": "preference",
    "cause": "fix",
}

INSTRUCTIONS = """\
You keep the long-term memory of a software project for coding agents.
From the session digest below, list only the durable facts a later session needs:
a decision with its reason, a project convention, a setup fact (paths, services,
versions, hosts, commands that configure something), a preference of the person, or the
cause of a failure that stays true. Skip progress reports, completion reports, states of
the moment that were later fixed, plans, questions, and anything true only now.
Write each fact as one self-contained sentence in the third person that names its subject
("The project uses pnpm because installs were slow."), never "it" or "this". When the
session shows an earlier claim is no longer true, give that claim in "outdates".
Never include secrets or [REDACTED] values. Answer with JSON only, matching the schema:
{"facts": [{"text": "...", "subject": "...", "kind": "decision|convention|setup|preference|cause",
"source": "<the sentence it came from>", "outdates": null}]}
and {"facts": []} when nothing is worth keeping."""

#: JSON Schema of the answer (OpenAI's strict structured outputs accept it: every property
#: required, no others, nullable by a type list).
FACTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "subject": {"type": "string"},
                    "kind": {"type": "string", "enum": list(MODEL_KINDS)},
                    "source": {"type": "string"},
                    "outdates": {"type": ["string", "null"]},
                },
                "required": ["text", "subject", "kind", "source", "outdates"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}


def json_in(content: str) -> Any:
    """The first JSON object or array in a model's answer (code fences tolerated).

    Raises:
        ValueError: the answer holds no JSON.
    """
    text = content.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    starts = sorted((i, o) for o in ("{", "[") if (i := text.find(o)) >= 0)  # whichever opens first
    for start, _ in starts:
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
            return obj
        except ValueError:
            continue
    raise ValueError("no JSON in the answer")


def _short(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text[:MAX_STATEMENT_CHARS] or None


def statements_from(data: Any) -> list[Statement]:
    """The statements of a parsed answer: ``{"facts": [...]}``, a bare list, or strings.

    Items that are not a fact with a text, texts over
    :data:`~bli_memory.core.extraction.statements.MAX_STATEMENT_CHARS` and repeats are
    skipped; at most :data:`~bli_memory.core.extraction.statements.MAX_STATEMENTS` are
    kept. Unknown kinds become ``fact``.

    Raises:
        ValueError: the answer is neither an object with a ``facts`` list nor a list.
    """
    items = data.get("facts") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError("the answer holds no list of facts")
    out: list[Statement] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            continue
        statement = " ".join(item["text"].split())
        if not statement or len(statement) > MAX_STATEMENT_CHARS or statement.lower() in seen:
            continue
        raw_kind = str(item.get("kind", "fact")).lower()
        kind = MODEL_KINDS.get(raw_kind, raw_kind if raw_kind in KINDS else "fact")
        seen.add(statement.lower())
        out.append(Statement(text=statement, kind=kind, subject=_short(item.get("subject")),  # type: ignore[arg-type]
                             source=_short(item.get("source")), outdates=_short(item.get("outdates"))))
        if len(out) >= MAX_STATEMENTS:
            break
    return out
