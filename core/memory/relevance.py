"""Whether a prompt gets memories injected at all, and which: the injection gate.

``search_memory`` stays broad (whoever asked can judge the hits). Automatic injection
cannot ask: a block on every prompt costs tokens and puts memories that do not bear on
the prompt in the model's context. One absolute cosine floor cannot tell the two cases
apart with all-MiniLM-L6-v2: on LoCoMo a question typed in *another* conversation's
space still finds a hit at cosine 0.35 or more on 47 % of prompts, while 5 % of the
questions typed in their own space have their best hit below 0.45
(``docs/benchmarks.md``, hook section).

The gate uses two pieces of evidence, both cheap:

- ``top``: the best cosine similarity of the prompt to any memory of the space (what
  the vector channel already computed);
- ``coverage``: how much of the prompt's content terms (stopwords dropped, the keyword
  channel's own terms and stems, :func:`bli_memory.core.memory.terms.query_terms`) the best of
  the first hits holds, each term weighed by its rarity in the space (BM25 idf,
  :func:`bli_memory.core.memory.term_evidence.hit_coverage`). A prompt about people, projects
  or identifiers the space has never mentioned is not about this space, however close
  its wording; nor is a prompt about another codebase whose only words in common with
  this one are those every codebase uses. In a space of fewer than :data:`SMALL_SPACE`
  memories what a hit lacks says little (few words were ever written), so the shortfall
  is scaled down by ``size / SMALL_SPACE``.

The first release weighed every term alike and counted those found nowhere in the
space (:func:`unseen_share`); on the code near misses it kept a block on 58 % of the
prompts, the idf-weighted coverage on 40 % at the same hook recall (calibration split,
``docs/benchmarks.md``, hook section, feature sets side by side).

Background features were fitted beside these two and not kept: the best cosine's margin
over the other hits or over the 90th percentile of the prompt's cosines to the space,
and the prompt's mean cosine to the space. Each lowers the near misses in code only as
far as it lowers real code hits (a docstring's first line in its own codebase, itself
left out): at equal code-hit recall none leaves fewer near misses than these two
(``bench/hook.py``, feature sets side by side, ``docs/benchmarks.md``, hook section).

They are combined by a logistic model, ``z = b + w_top * top + w_cover * coverage``,
fitted by ``bench/hook.py --calibrate`` on a calibration split that the reported
figures do not use (:data:`GATE_WEIGHTS`), and the prompt passes when ``z`` reaches
:data:`GATE_THRESHOLD`. A hit that matches every content term of the prompt lexically,
or every code identifier the prompt names, always passes: a prompt naming
``BLI-3580`` or ``parse_config`` gets the memories that name it (on LoCoMo dev, a hit
matching every term occurs for 20 % of the questions in their own space and for none
typed in another conversation's space).

**Two kinds of space, two bars.** In a space of short texts unlike one another (a
codebase's docstrings, a project's notes on many subjects) text of the same kind on
another subject reaches a best cosine of 0.46 on average, against 0.35 for a question
typed in another conversation's space, so the one threshold that keeps conversations
apart lets a quarter of the near misses in code through. Which kind a space is shows in
its *background*, the mean cosine between two of its memories: 0.49-0.60 for the LoCoMo
conversations, 0.11-0.14 for the docstring spaces. A space of at least
:data:`SMALL_SPACE` memories whose background is below :data:`DIVERSE_BACKGROUND` needs
``z`` to reach :data:`DIVERSE_THRESHOLD` instead (``background`` of :func:`decide`). It
costs real code hits (a docstring's first line in its own codebase: 0.74 -> 0.52 on the
report split), the price of near misses falling from 0.25 to 0.07; conversation spaces
are untouched (``docs/benchmarks.md``, hook section).

Once a prompt passes, the block holds the best fused hits (at most ``limit``), except
hits far below the best cosine (:data:`TAIL_DROP`), whichever channel found them: a
memory that shares a word with the prompt ("function") but not its subject stays out. Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bli_memory.core.memory.terms import raw_tokens, terms
from bli_memory.core.models import SearchHit

__all__ = [
    "DIVERSE_BACKGROUND",
    "DIVERSE_THRESHOLD",
    "GATE_THRESHOLD",
    "GATE_WEIGHTS",
    "SMALL_SPACE",
    "TAIL_DROP",
    "Decision",
    "decide",
    "gate_score",
    "identifiers",
    "unseen_share",
]

#: ``(bias, w_top, w_cover)`` of the logistic gate, fitted by ``bench/hook.py
#: --calibrate`` on the calibration split only: LoCoMo dev conversations 1-3 (questions
#: in their own space positive; in the next conversation's space and in a codebase
#: negative) and the standard-library docstrings whose module name hashes even
#: (cross-domain and near-miss negatives); positives weigh as much as all negatives,
#: each negative condition equally. Run of 2026-12-01, ``docs/benchmarks.md`` (hook section).
GATE_WEIGHTS = (-7.103, 9.323, 8.162)
#: Smallest ``z`` that injects: the lowest threshold (0.05 steps) at which false
#: injection across conversations on the calibration split is at most 0.025, half the
#: 0.05 allowed, as a margin for conversations the gate was not fitted on
#: (``bench/hook.py``, ``CROSS_TARGET``)
#: (``docs/benchmarks.md``, hook section, precision/recall over the threshold).
GATE_THRESHOLD = 0.1
#: A space whose background (mean cosine between two of its live memories) is below
#: this is a space of mutually unlike texts, held to :data:`DIVERSE_THRESHOLD`. Set in
#: the wide gap between the kinds measured: 0.49-0.60 for the six LoCoMo conversation
#: spaces, 0.11-0.14 for the four docstring spaces (``bench/hook.py`` run of
#: 2026-12-01, ``docs/benchmarks.md``, hook section).
DIVERSE_BACKGROUND = 0.3
#: Smallest ``z`` that injects in such a space: the lowest threshold (0.05 steps) at
#: which near misses between unrelated codebases (``code_subject``) on the calibration
#: split are at most 0.05, half the 0.10 allowed, as a margin (``bench/hook.py
#: --calibrate``, ``DIVERSE_TARGET``; report split 0.066, ``docs/benchmarks.md``).
DIVERSE_THRESHOLD = 2.35
#: Below this many live memories, what the best hit lacks of the prompt's terms is
#: scaled by ``size / 100`` (and the first release's unseen share likewise): a design
#: choice, not a measurement (a space of a few memories has too few words for a missing
#: term to mean anything; LoCoMo spaces hold 400-700, the docstring spaces 750-790).
SMALL_SPACE = 100
#: A hit more than this far below the best cosine is left out of the block. On LoCoMo
#: dev (import path) this keeps hook recall within 0.002 of the unfiltered top 5 and
#: drops 2 % of the lines; applying it to keyword hits too (not only vector-only ones)
#: cost hook recall 0.002 on the report split (0.660 -> 0.658, one question of 500) and
#: 0.5 % of the lines (``docs/benchmarks.md``, hook section).
TAIL_DROP = 0.25


@dataclass(frozen=True)
class Decision:
    """What the gate decided for one prompt.

    Attributes:
        inject: The hits to inject, best first (empty: the prompt gets nothing).
        score: ``z`` of the logistic gate (None when the space had no vector hit).
        top: Best cosine similarity among the hits (None without one).
        coverage: Idf-weighted share of the prompt's terms the best of the first hits
            holds, after the small-space scaling.
        reason: ``exact_keyword``, ``relevant``, ``below_threshold`` or ``no_hits``.
        threshold: The ``z`` this space needed (:data:`GATE_THRESHOLD`, or
            :data:`DIVERSE_THRESHOLD` in a space of mutually unlike texts).
        given: Memories the prompt would have got that were left out because the
            session already has them (set by
            :func:`bli_memory.core.hooks.prompt_recall.prompt_decision`).
    """

    inject: tuple[SearchHit, ...]
    score: float | None
    top: float | None
    coverage: float
    reason: str
    threshold: float = GATE_THRESHOLD
    given: int = 0


def gate_score(top: float, coverage: float) -> float:
    """``z`` of the logistic gate.

    Args:
        top: Best cosine similarity of the prompt to a memory of the space.
        coverage: Idf-weighted share (0..1) of the prompt's terms the best of the first
            hits holds (:func:`bli_memory.core.memory.term_evidence.hit_coverage`).
    """
    b, w_top, w_cover = GATE_WEIGHTS
    return b + w_top * top + w_cover * coverage


def unseen_share(present: Sequence[bool], space_size: int) -> float:
    """Share of terms absent from the space (``present[i]`` False), scaled for small spaces.

    The first release's lexical feature, kept for the bench's side-by-side
    (``bench/hook.py``, feature set ``v1``); the gate now uses coverage.

    Args:
        present: One flag per content term of the prompt.
        space_size: Live memories in the space.

    Returns:
        0.0..1.0; 0.0 for no terms.
    """
    if not present:
        return 0.0
    share = sum(1 for p in present if not p) / len(present)
    return share * min(1.0, max(space_size, 0) / SMALL_SPACE)


def _is_identifier(token: str) -> bool:
    body = token.strip("'")
    if not any(c.isalpha() for c in body):  # years, counts and versions without letters
        return False
    return (
        any(c.isdigit() for c in body)
        or any(c in "_.-/#:@+" for c in body)
        or any(a.islower() and b.isupper() for a, b in zip(body, body[1:], strict=False))
    )


def identifiers(prompt: str) -> list[str]:
    """The prompt's code identifiers, lowercased as the keyword index holds them.

    An identifier is a token (:func:`~bli_memory.core.memory.terms.raw_tokens`) with a letter
    and a digit, a connector or ``_`` (``BLI-3580``, ``parse_config``, ``search.ts``,
    ``v0.2.83``), or a ``camelCase`` boundary (``getUser``). Bare numbers are not: a
    year or a count names no particular memory (LoCoMo memories all carry dates).
    """
    return list(dict.fromkeys(t.lower() for t in raw_tokens(prompt) if _is_identifier(t)))


def decide(
    hits: Sequence[SearchHit],
    *,
    coverage: float,
    limit: int,
    prompt: str = "",
    floor: float = -1.0,
    skip_ids: frozenset[str] | set[str] = frozenset(),
    skip_session: str | None = None,
    background: float | None = None,
) -> Decision:
    """Decide what one prompt gets injected.

    Args:
        hits: The search hits, best fused first (more than ``limit`` is fine).
        coverage: Idf-weighted share of the prompt's terms the best of the first hits
            holds (:func:`~bli_memory.core.memory.term_evidence.hit_coverage`).
        limit: Most hits injected.
        prompt: The prompt as searched: a hit naming every identifier in it passes
            (:func:`identifiers`).
        floor: A prompt whose best cosine is below this gets nothing from the gate
            (``BLI_MEMORY_SIMILARITY_FLOOR``); exact keyword and identifier hits pass.
        skip_ids: Memory ids never injected (already injected in this session).
        skip_session: Memories of this host session are never injected (the model has
            that part of the session in its context already).
        background: Mean cosine between two live memories of the space, or None when
            unknown or the space is small (``space_background`` of the backend); below
            :data:`DIVERSE_BACKGROUND` the bar is :data:`DIVERSE_THRESHOLD`.

    Returns:
        The :class:`Decision`. The gate looks at every hit (a memory already injected
        still shows the space is on the prompt's subject); the skips only apply to
        what is injected.
    """
    sims = [h.similarity for h in hits if h.similarity is not None]
    top = max(sims) if sims else None

    def allowed(h: SearchHit) -> bool:
        return h.memory.id not in skip_ids and not (skip_session and h.memory.session_id == skip_session)

    names = identifiers(prompt)

    def names_all(h: SearchHit) -> bool:
        return bool(names) and set(names) <= set(terms(h.memory.content))

    exact = [h for h in hits if (h.exact_keyword or names_all(h)) and allowed(h)]
    if exact:
        # Every content term of the prompt, or every identifier it names, occurs in
        # these memories: the space is on the prompt's subject, whatever the cosine.
        rest = [
            h
            for h in hits
            if h not in exact and allowed(h) and top is not None and (h.similarity or 0.0) >= top - TAIL_DROP
        ]
        return Decision(tuple([*exact, *rest][:limit]), None, top, coverage, "exact_keyword")
    if top is None:
        return Decision((), None, None, coverage, "no_hits")
    score = gate_score(top, coverage)
    bar = DIVERSE_THRESHOLD if background is not None and background < DIVERSE_BACKGROUND else GATE_THRESHOLD
    if score < bar or top < floor:
        return Decision((), score, top, coverage, "below_threshold", bar)
    kept = [h for h in hits if allowed(h) and (h.similarity or 0.0) >= top - TAIL_DROP]
    return Decision(tuple(kept[:limit]), score, top, coverage, "relevant", bar)
