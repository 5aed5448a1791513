"""The default extractor: rules over sentences, offline, deterministic.

:class:`RuleExtractor` keeps each candidate of
:func:`~bli_memory.core.extraction.candidates.candidates` the rules keep, rewritten to
stand alone (:func:`~bli_memory.core.extraction.classify.rewrite`). The standard library
only; the rules compile on first use.
"""

from __future__ import annotations

from bli_memory.core.extraction.candidates import candidates
from bli_memory.core.extraction.classify import rewrite
from bli_memory.core.extraction.statements import MAX_STATEMENTS, Statement

__all__ = ["RuleExtractor"]


class RuleExtractor:
    """The default extractor: rules over sentences, offline, deterministic.

    Keeps a sentence when it states a decision (``we decided``, ``switched from X to
    Y``, ``rather than``), a preference (``I prefer``), a convention (``always``,
    ``never``, an instruction such as ``use black with line length 100``), a fix
    (``fails because``, ``fixed by``, an error name with its cause), a command that
    works (inline shell code with ``run``/``with``/``to build``), or a fact about the
    project (a specific value such as a path, host, version or tool name, with a
    verb of state such as ``is``, ``lives in``, ``runs on``). Questions, chit-chat,
    promises, narration of one-off work and transient status are dropped.
    Precision and recall on the labelled set are in ``docs/benchmarks.md``.
    """

    name = "default"

    def extract(self, text: str) -> list[Statement]:
        """See :meth:`~bli_memory.core.extraction.statements.Extractor.extract`.

        Each candidate sentence (:func:`~bli_memory.core.extraction.candidates.candidates`)
        the rules keep is rewritten to stand alone
        (:func:`~bli_memory.core.extraction.classify.rewrite`); repeats are dropped.
        """
        out: list[Statement] = []
        seen: set[str] = set()
        for c in candidates(text):
            if not c.rule_keep:
                continue
            statement = rewrite(c.text, c.role)
            key = " ".join(statement.lower().split())
            if key in seen:
                continue
            seen.add(key)
            out.append(Statement(text=statement, kind=c.kind or "fact"))
            if len(out) >= MAX_STATEMENTS:
                return out
        return out

