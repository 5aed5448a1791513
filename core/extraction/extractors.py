"""Extractors: raw conversation text -> atomic statements worth keeping.

This module owns the :class:`Extractor` protocol, the :class:`Statement` it returns,
the two built-in extractors and the choice between them:

- ``default`` (:class:`RuleExtractor`): offline, no model service. It splits an
  exchange into candidate statements (turns, paragraphs, bullets, sentences; inline
  code kept whole) and keeps the durable ones: decisions and their reasons,
  preferences, conventions, facts about the project, commands that worked and fixes
  to errors. Questions, chit-chat, acknowledgements, promises ("I'll ...") and
  transient status ("Running the tests...", "All 214 tests passed") are dropped.
- ``openai`` (:class:`ChatCompletionsExtractor`): asks any OpenAI-compatible
  ``/chat/completions`` endpoint (httpx) for the same list. Used only when the person
  sets ``BLI_MEMORY_EXTRACT_URL`` (and ``BLI_MEMORY_EXTRACT_MODEL``, optionally
  ``BLI_MEMORY_EXTRACT_API_KEY``); the default never needs it. Text reaching it has
  already been redacted (:func:`bli_memory.core.extraction.reconcile.distil` redacts first).

Extractors are plugins: each is registered through the ``register_extractors``
hook (:mod:`bli_memory.core.plugins`) as ``register(name, factory)``, where
``factory()`` returns an object with ``name`` and ``extract(text) -> list[Statement]``.
This module registers the two built-ins the same way. :func:`get_extractor` picks
``BLI_MEMORY_EXTRACTOR`` when set, else ``openai`` when an endpoint is configured,
else ``default``.

Debugging hook: ``BLI_MEMORY_EXTRACT_PLUGINS=module[,module...]`` names importable
modules that are registered as plugins before the choice is made, so an extractor can
be plugged in without installing a package (an entry point): for example a slow or
failing extractor to watch the worker's leases and retries. Combine it with
``BLI_MEMORY_EXTRACTOR=<name>`` to select it.

Text inside ``<bli-memory-recall>``, ``<bli-memory-context>`` and ``<hook_context>``
blocks is removed before anything is extracted (:func:`bli_memory.core.hooks.blocks.strip_injected`).

Importing this module costs the standard library only (it is a default plugin, loaded
by every plugin manager, the hook's included); the rules compile on first use and
httpx is imported only by the ``openai`` extractor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, Protocol

from bli_memory.core.hookspecs import hookimpl

if TYPE_CHECKING:
    import pluggy

    from bli_memory.core.settings import Settings

__all__ = [
    "KINDS",
    "ChatCompletionsExtractor",
    "Extractor",
    "RuleExtractor",
    "Statement",
    "StatementKind",
    "available_extractors",
    "content_terms",
    "get_extractor",
    "negated",
    "register_extractors",
    "specific_terms",
]

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
    """

    text: str
    kind: StatementKind = "fact"


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


# =================================================================================
# Text analysis shared with reconcile
# =================================================================================

#: Words carrying no subject matter, ignored when comparing what two statements say.
_STOPWORDS = frozenset(
    """
    a an the and or but if then than so as of in on at to for from by with without into onto
    over under about after before during between through via per is are was were be been being
    am do does did done has have had having it its it's this that these those there here we
    we're we've we'll our ours us i i'm i've i'll me my mine you you're your yours he she they
    them their what which who whom whose when where why how all any each every some such
    also just only very really now still already yet again always never not no nor n't don't
    doesn't didn't isn't aren't wasn't weren't won't can't cannot should would could must
    can will shall may might user user's users please use uses used using
    """.split()
)

#: Words that flip what a statement says (``always``/``never`` and friends are paired).
_NEGATIONS = frozenset(
    """
    not no never none nobody nothing without avoid avoids avoided disable disables disabled
    off false forbid forbids forbidden exclude excludes excluded stop stopped don't doesn't
    didn't isn't aren't wasn't weren't won't can't cannot shouldn't mustn't n't neither nor
    """.split()
)

#: Tool and product names that are also ordinary English words.
_NAME_WORDS = frozenset(
    """
    yarn black react python rust java fly poetry spaces tabs node bun deno ruby rails swift
    kotlin scala perl php mongo oracle linux windows mac macos ubuntu debian alpine fedora chrome
    firefox safari jenkins travis circle azure google amazon aws apple slack jira notion sentry
    vim emacs make bash zsh fish docker express spring angular ember svelte solid remix next
    nuxt gatsby astro hugo jekyll flask django celery redis postgres mysql sqlite mongodb
    """.split()
)

#: Upper-case abbreviations that name a kind of thing, not a specific one.
_GENERIC_ACRONYMS = frozenset(
    """
    api apis ci cd pr prs ui ux url urls http https json yaml sql cli sdk db id ids ok todo os
    cpu gpu ram io ip tcp udp dns ssh tls ssl html css js ts env faq
    """.split()
)

#: Developer words that are not in the general vocabulary but name no specific value.
_JARGON = frozenset(
    """
    frontend backend config configs repo repos timezone websocket websockets linter monorepo
    async await stdout stderr stdin localhost dev prod staging refactor refactoring lockfile
    codebase workflow workflows changelog middleware namespace namespaces endpoint endpoints
    boolean unicode utf emoji emojis flaky tokenizer runtime dockerfile plugin plugins dict
    dicts hashable iterable iterables struct structs enum enums tuple tuples bool int str regex
    callback callbacks mutex params args kwargs util utils lib libs src auth init impl env var
    vars cron gui webhook webhooks dataclass dataclasses decorator decorators substring mutable
    immutable hashable serializable
    """.split()
)

# Patterns are strings, compiled by ``re``'s cache on first use: nothing compiles at import.
_CODE_SPAN = r"`([^`\n]{1,200})`"
_WORD = r"[A-Za-z0-9][A-Za-z0-9_.:/@+#-]*[A-Za-z0-9+#]|[A-Za-z0-9]"


@cache
def _vocabulary() -> frozenset[str]:
    """The embedding model's word-piece vocabulary (whole words only), or empty.

    A word the model knows as one piece is ordinary English; one it has to split
    (``pnpm``, ``heroku``, ``vitest``) is almost always a name or an identifier.
    """
    from importlib import resources

    try:
        data = json.loads(
            resources.files("bli_memory.core.model").joinpath("tokenizer.json").read_text("utf-8")
        )
        vocab = data["model"]["vocab"]
    except (OSError, ValueError, KeyError, TypeError):
        return frozenset()
    return frozenset(w for w in vocab if w.isalpha() and not w.startswith("##"))


def _stem(word: str) -> str:
    """A crude English stem so ``commits``/``committing``/``commit`` compare equal."""
    w = word.lower().strip(".:/-")
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if len(w) > len(suffix) + 2 and w.endswith(suffix) and w.isalpha():
            w = w[: -len(suffix)] + keep
            break
    if len(w) > 3 and w[-1] == w[-2] and w.isalpha():  # committ -> commit
        w = w[:-1]
    return w


def _is_common(word: str) -> bool:
    """True for an ordinary English (or generic developer) word."""
    w = word.lower()
    vocab = _vocabulary()
    if w in _JARGON or w in _GENERIC_ACRONYMS:
        return True
    if not vocab:
        return True
    if w in vocab:
        return True
    for suffix in ("s", "es", "ed", "d", "ing", "ly", "er", "ers"):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            base = w[: -len(suffix)]
            if base in vocab or base + "e" in vocab:
                return True
    # The vocabulary sometimes holds only an inflected form ("expired", not "expire").
    return any(w + suffix in vocab for suffix in ("s", "d", "ed", "r", "rs", "ing"))


def specific_terms(text: str) -> frozenset[str]:
    """The specific values a statement names: identifiers, paths, versions, numbers, names.

    A term is specific when it is inline code, holds a digit or one of ``. / _ : @``
    inside it, is CamelCase or an upper-case abbreviation that is not generic (``JWKS``
    but not ``API``), is capitalised in the middle of a sentence, is a tool name that
    is also an English word (``yarn``, ``black``), or is a word the embedding model's
    vocabulary does not hold (``pnpm``, ``heroku``). Compared lower-case.

    Args:
        text: One statement.

    Returns:
        Lower-case terms; empty for plain prose.
    """
    out: set[str] = set()
    for span in re.findall(_CODE_SPAN, text):
        out.add(span.strip().lower())
    plain = re.sub(_CODE_SPAN, " ", text)
    for quoted in re.findall(r"(?<!\w)['\"]([^'\"\s]{1,30})['\"](?!\w)", plain):
        out.add(quoted.lower())  # a quoted value: 'all', "md"
    for m in re.finditer(_WORD, plain):
        word = m.group(0)
        before = m.start() - 1
        while before >= 0 and plain[before].isspace():
            before -= 1
        sentence_start = before < 0 or plain[before] in ".!?:;"
        low = word.lower().rstrip(".:")
        if not low:
            continue
        if any(c.isdigit() for c in word) or re.search(r"[a-z0-9][._/:@][a-z0-9]", low):
            out.add(low)
        elif low in _NAME_WORDS:
            out.add(low)
        elif word.isupper() and len(word) >= 2:
            if low not in _GENERIC_ACRONYMS:
                out.add(low)
        elif re.search(r"[a-z][A-Z]", word):
            out.add(low)
        elif word[0].isupper() and not sentence_start and low not in _STOPWORDS and len(low) > 2:
            out.add(low)  # a name in the middle of a sentence: Heroku, Jinja2, Vite
        elif not _is_common(word) and low not in _STOPWORDS:
            out.add(low)
    return frozenset(out)


def content_terms(text: str) -> frozenset[str]:
    """Stemmed words that carry subject matter (stopwords and negations removed)."""
    plain = re.sub(_CODE_SPAN, lambda m: " " + m.group(1) + " ", text)
    out = set()
    for m in re.finditer(_WORD, plain):
        low = m.group(0).lower()
        if low in _STOPWORDS or low in _NEGATIONS or low.endswith("n't"):
            continue
        out.add(_stem(low))
    return frozenset(out)


def negated(text: str) -> bool:
    """True when the statement is negative (odd number of negations; ``never``, ``no``, ...)."""
    words = re.findall(r"[a-z']+", re.sub(_CODE_SPAN, " ", text).lower())
    count = sum(1 for w in words if w in _NEGATIONS or w.endswith("n't"))
    # "no longer X" announces a change (reconcile supersedes), it does not contradict X.
    count += text.lower().count("no longer")
    return count % 2 == 1


# =================================================================================
# The default extractor
# =================================================================================


class _Rules:
    """The compiled rules (a plain class: a 30-field dataclass costs a millisecond to import)."""

    role_line: re.Pattern[str]
    fence: re.Pattern[str]
    bullet: re.Pattern[str]
    sentence_end: re.Pattern[str]
    filler: re.Pattern[str]
    remember: re.Pattern[str]
    question_start: re.Pattern[str]
    chit_chat: re.Pattern[str]
    transient: re.Pattern[str]
    promise: re.Pattern[str]
    future: re.Pattern[str]
    progressive: re.Pattern[str]
    acknowledgement: re.Pattern[str]
    trouble: re.Pattern[str]
    cause: re.Pattern[str]
    procedure: re.Pattern[str]
    narration: re.Pattern[str]
    fix: re.Pattern[str]
    error_token: re.Pattern[str]
    decision: re.Pattern[str]
    preference: re.Pattern[str]
    convention: re.Pattern[str]
    imperative: re.Pattern[str]
    purpose: re.Pattern[str]
    command_word: re.Pattern[str]
    command_verb: re.Pattern[str]
    stative: re.Pattern[str]

    def __init__(self, **patterns: re.Pattern[str]) -> None:
        self.__dict__.update(patterns)


@cache
def _rules() -> _Rules:
    """Compile the rules once, on first use (import stays cheap for the hook)."""
    i = re.IGNORECASE
    return _Rules(
        role_line=re.compile(r"^(user|human|assistant|ai|model|agent)\s*:\s?", i | re.MULTILINE),
        fence=re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL),
        bullet=re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+"),
        sentence_end=re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[`\x00])"),
        filler=re.compile(
            r"^(?:ok(?:ay)?|so|also|btw|fyi|note|ps|and|but|well|yes|yeah|yep|sure|great|right|"
            r"alright|got it|understood|noted|done|implemented|makes sense|thanks|perfect|cool|"
            r"good news|in short|tl;?dr|update|important|hey|hi|hello|heads[- ]up|fwiw|"
            r"quick (?:context|note|question)(?: before we start)?)\b[\s,.:!\u2014\u2013-]*",
            i,
        ),
        remember=re.compile(
            r"^(?:please\s+)?(?:remember|note|keep in mind|don't forget|do not forget|"
            r"just so you know|for the record|for future reference)\b(?:\s+that)?[\s,:]*",
            i,
        ),
        question_start=re.compile(
            r"^(?:what|why|how|where|when|which|who|whom|whose|can|could|would|will|should|"
            r"shall|do|does|did|is|are|am|was|were|have|has|any idea|any chance|"
            r"wdyt|thoughts)\b",
            i,
        ),
        chit_chat=re.compile(
            r"^(?:thanks?|thank you|ty|thx|you're welcome|you are welcome|no problem|"
            r"no worries|happy to help|glad|great|awesome|perfect|nice|cool|lgtm|looks good|"
            r"sounds good|sounds great|hi|hello|hey|hmm+|ah|oh|wow|enjoy|hope this helps|"
            r"let me know|feel free|take your time|good (?:morning|night|luck)|see you|bye|"
            r"i'm going to (?:lunch|bed|sleep)|back in|brb|sorry|oops|i see)\b",
            i,
        ),
        transient=re.compile(
            r"^(?:let me|let's see|now i|now,? i'm|i'm now|i am now|i'm going to|i am going to|"
            r"i'm currently|i am currently|next,? i|first,? i|then i|running|checking|looking|"
            r"searching|reading|deploying|building|installing|continuing|working on|"
            r"all \d+ (?:tests|checks)|all (?:the )?tests|(?:\d+|the) tests? (?:pass|passed|fail)|"
            r"the (?:deploy|deployment|build|test run|tests|suite|job) (?:finished|passed|"
            r"succeeded|is done|is green|completed)|summary|here's|here is|here are|below is|"
            r"i ran|i've run|i have run|i tried|i've tried|i checked|i looked|i read|i found|"
            r"i opened|i searched|i'll (?:now|start|begin|take|look|check)|i will (?:now|start)|"
            r"on it|working|one moment|give me a (?:moment|second)|it applied|it worked|it works)\b",
            i,
        ),
        promise=re.compile(
            r"^(?:i'll|i will|i'd|will do|i can|i could|want me to|shall i|should i|i'm happy to|"
            r"i need to|i have to|i must first|"
            r"i am happy to|if you (?:want|like|prefer))\b",
            i,
        ),
        future=re.compile(r"\b(?:will|won't|i'll|we'll|you'll|going to)\b", i),
        progressive=re.compile(r"^(?:i'm|i am|i've been|i have been)\s+\w+ing\b", i),
        acknowledgement=re.compile(
            r"^(?:got it|understood|noted|makes sense|sure|will do|ok(?:ay)?|of course|"
            r"absolutely|right|good (?:call|idea|point)|agreed)\b",
            i,
        ),
        trouble=re.compile(
            r"\b(?:fail\w*|error\w*|crash\w*|timed out|times out|timeouts?|hang(?:s|ing)?|hung|"
            r"flak\w*|broken|breaks|slow(?:er|ly)?|never (?:fires|completes|returns|resolves|"
            r"finishes|exits)|leak\w*|deadlock\w*|race condition|stale|exception)\b",
            i,
        ),
        cause=re.compile(
            r"\b(?:because|caused by|due to|comes from|came from|fixed|fixes|resolved|the cause)\b", i
        ),
        procedure=re.compile(
            r"\b(?:(?:release|deploy(?:ment)?|build|setup|install(?:ation)?|rollback|migration|"
            r"onboarding|upgrade|backup|restore) (?:process|procedure|steps|flow|checklist|runbook)|"
            r"to (?:release|deploy|publish|roll back|set up|bootstrap|reset|restore|rotate)\b.{0,40}[:,])",
            i,
        ),
        narration=re.compile(
            r"^(?:i|i've|i have)\s+(?:\w+ed|wrote|made|set|put|built|ran|found|kept|took|"
            r"got|went|left|split|cut|rewrote|began|brought|did|gave|read|saw|thought)\b",
            i,
        ),
        fix=re.compile(
            r"\b(?:fix(?:ed|es)?\s+(?:it|this|that|the\s+\w+\s*)?\s*(?:by|with)|the fix (?:is|was)|"
            r"fix(?:es|ed)? (?:it|this|that)\b|root cause|caused by|(?:happens|happened|occurs|"
            r"occurred|comes|came) (?:because|from)|(?:fails?|failed|failing|broke|breaks|"
            r"crash(?:es|ed)?|timed out|times out|hangs?|hung|was slow|is slow|errors?(?: out)?) "
            r"because|because of (?:a|an|the)|the (?:problem|issue|bug|error|failure|crash|slow part|"
            r"culprit) (?:is|was|comes|came)|resolved by|solved by|work(?:s|ed)?\s?around|"
            r"shadow(?:s|ed|ing)?\b|frees? it|freed it|(?:starts|works|passes|builds) again|"
            r"is clean now|no longer (?:fails|crashes|times out|errors))",
            i,
        ),
        error_token=re.compile(
            r"\b\w*(?:Error|Exception|Warning)\b|\bE[A-Z]{4,}\b|\btraceback\b|\bsegfault\b|"
            r"\bexit (?:code|status) \d+|\b(?:4|5)\d\d\b(?= (?:error|response|status))",
        ),
        decision=re.compile(
            r"\b(?:(?:we|i)\s*(?:'ve|have)?\s*(?:decided|chose|chosen|picked|agreed|settled on|"
            r"went with|opted|standardi[sz]ed)|(?:we're|we are|we've been)\s+(?:going with|"
            r"sticking with|staying on|staying with|on|using|moving|switching)|let's\s+(?:use|go with|"
            r"switch|move|keep|stick|stay|adopt|drop|replace|migrate|standardi[sz]e)|"
            r"(?:switch(?:ed|ing)?|mov(?:e|ed|ing)|migrat(?:e|ed|ing)|upgrad(?:e|ed|ing)|"
            r"downgrad(?:e|ed|ing)|port(?:ed|ing)?)\s+(?:[\w.@/-]+\s+){0,4}(?:from|to)\b|"
            r"replac(?:e|ed|es|ing)\s+.{1,80}?\s+with\b|"
            r"\b(?:use|uses|using|used|chose|choose|keep|kept|prefer|pick|picked|switch(?:ed)?|go with|"
            r"went with|stay on|stick with|adopt(?:ed)?|put|goes|go|live|lives)\b[^.;]{0,80}?"
            r"\b(?:instead of|rather than)\b|"
            r"\bover\b.{0,60}\b(?:because|since|as)\b|decision|going forward|from now on|"
            r"no longer|stopped using|deprecated|we (?:chose|use|keep|pin|stay)\b.{0,80}"
            r"\b(?:because|since|so that))",
            i,
        ),
        preference=re.compile(
            r"\b(?:(?:i|we)\s+(?:really\s+|strongly\s+)?(?:prefer|like|love|hate|dislike|want|"
            r"would rather|'d rather|need)|(?:i|we)\s+(?:don't|do not|never)\s+(?:want|like|"
            r"use|need)|my (?:favou?rite|preferred)|the user (?:prefers|likes|wants|hates|"
            r"dislikes|does not want))\b",
            i,
        ),
        convention=re.compile(
            r"\b(?:always|never|must|must not|mustn't|is required|are required|convention|"
            r"the rule is|by default|every (?:pr|commit|change|release|file|test|module|endpoint)|"
            r"(?:each|every) \w+ (?:has|have|gets|needs|must)|only ever|don't ever|do not ever)\b",
            i,
        ),
        imperative=re.compile(
            r"^(?:please\s+)?(?:use|keep|put|name|avoid|prefer|store|place|format|don't|do not|"
            r"never|always|stick to|follow|pin|target|prefix|suffix|indent)\b",
            i,
        ),
        purpose=re.compile(
            r"\b(?:so that|so the|so it|so we|so vite|so ci|so tests?|so dependencies|to avoid|"
            r"to prevent|to keep|to make sure|to ensure|because|since|which means|so that)\b",
            i,
        ),
        command_word=re.compile(
            r"^(?:\$\s*)?(?:make|npm|npx|pnpm|yarn|bun|deno|node|pip|pip3|uv|uvx|poetry|pipx|"
            r"python3?|pytest|tox|nox|ruff|black|mypy|docker|docker-compose|podman|kubectl|helm|"
            r"terraform|git|gh|cargo|rustup|go|bundle|bundler|rails|rake|mvn|gradle|\./\S+|bash|sh|"
            r"curl|wget|alembic|psql|redis-cli|aws|gcloud|az|fly|flyctl|heroku|vercel|just|task|"
            r"lsof|kill|xargs|systemctl|brew|apt|apt-get|sudo|ssh|scp|rsync|env|export|source|"
            r"dotnet|java|jest|vitest|playwright|eslint|prettier|tsc|cmake|ninja|bazel)\b",
        ),
        command_verb=re.compile(
            r"\b(?:run|runs|ran|use|uses|with|via|works|worked|passes|starts?|builds?|is how|"
            r"are run|is run|invoke|execute|to (?:build|test|deploy|start|run|release|install|"
            r"lint|format|migrate|publish|regenerate|update|reset|seed))\b",
            i,
        ),
        stative=re.compile(
            r"\b(?:is|are|lives?|live|runs? on|runs? in|uses|use|run|runs|depends on|listens on|"
            r"hosted|deployed|stored|configured|located|points? to|sits? in|belongs? to|owns?|maintains?|"
            r"written in|targets?|requires?|talks? to|calls?|reads?|loads?|serves?|expires?|"
            r"defined|kept|goes|go|holds?|contains?|needs?|supports?|has|have|owned|generated|"
            r"published|built with|pinned|takes? (?:priority|precedence)|overrides?|follows?|conforms? to|"
            r"stores?)\b",
            i,
        ),
    )


_ABBREVIATION = r"(?i)(?:^|[\s(])(?:e\.g|i\.e|etc|vs|approx|cf|mr|ms|dr|no|fig)\.$"


def _protect_code(text: str) -> tuple[str, list[str]]:
    spans: list[str] = []

    def keep(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    return re.sub(_CODE_SPAN, keep, text), spans


def _restore_code(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)


def _turns(text: str) -> list[tuple[str, str]]:
    """Split ``User: ... Assistant: ...`` text into (role, body); unmarked text is ``text``."""
    r = _rules()
    marks = list(r.role_line.finditer(text))
    if not marks:
        return [("text", text)]
    turns: list[tuple[str, str]] = []
    head = text[: marks[0].start()].strip()
    if head:
        turns.append(("text", head))
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        who = m.group(1).lower()
        role = "user" if who in ("user", "human") else "assistant"
        turns.append((role, text[m.end() : end].strip()))
    return turns


def _code_blocks(body: str) -> str:
    """Drop fenced code, but attach a short shell block to the line that introduces it."""
    r = _rules()

    def repl(m: re.Match[str]) -> str:
        lang = (m.group(1) or "").lower()
        lines = [ln.strip() for ln in m.group(2).splitlines() if ln.strip()]
        shell = lang in ("", "bash", "sh", "shell", "console", "zsh", "fish", "powershell", "ps")
        if shell and 1 <= len(lines) <= 3 and all(
            r.command_word.match(ln.lstrip("$ ").strip()) for ln in lines
        ):
            cmds = "; ".join(f"`{ln.lstrip('$ ').strip()}`" for ln in lines)
            return f"\x01{cmds}.\n\n"
        return "\n\n"

    out = r.fence.sub(repl, body)
    out = re.sub(r":[ \t]*(?:\r?\n\s*)*\x01", ": ", out)  # "run:" + block -> "run: `cmd`."
    return out.replace("\x01", "")


#: A line that opens with a short label and a colon ("Backend: Node.js + Express").
_LABEL_LINE = re.compile(r"^[A-Z][\w/+.-]*(?: [\w/+.-]+){0,2}:\s+\S")


def _units(body: str) -> list[str]:
    """Paragraphs -> bullets/lines -> sentences, with inline code kept whole."""
    r = _rules()
    body = _code_blocks(body)
    out: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        items: list[str] = []
        for line in para.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith("|") or re.fullmatch(r"[-=*_#]{3,}", stripped):
                continue
            if re.match(r"#{1,6}\s", stripped) and not stripped.endswith(":"):
                continue  # a heading titles what follows ("### Arguments for moving it"); it states nothing
            stripped = re.sub(r"^#{1,6}\s+", "", stripped)  # "### Output Location:" labels the next line
            if r.bullet.match(stripped) or not items:
                items.append(r.bullet.sub("", stripped))
            elif items[-1].rstrip().endswith(":") and re.fullmatch(r"`[^`]+`", stripped):
                items[-1] += " " + stripped  # "Output location:" + "`~/exports/`" on the next line
            elif items[-1].rstrip().endswith(":") or _LABEL_LINE.match(stripped):
                items.append(stripped)  # "Backend: Node.js + Express" on its own line is its own item
            else:
                items[-1] += " " + stripped
        for item in items:
            protected, spans = _protect_code(item.replace("**", "").replace("__", ""))
            pieces = r.sentence_end.split(protected)
            merged: list[str] = []
            for piece in pieces:
                if merged and re.search(_ABBREVIATION, merged[-1]):
                    merged[-1] += " " + piece
                else:
                    merged.append(piece)
            out.extend(_restore_code(p, spans).strip() for p in merged if p.strip())
    return out


def _clean(sentence: str) -> tuple[str, bool]:
    """Strip fillers and "remember that"; returns (text, began with an acknowledgement)."""
    r = _rules()
    s = sentence.strip().strip("*_ ")
    acknowledged = bool(r.acknowledgement.match(s))
    for _ in range(3):
        new = r.filler.sub("", s, count=1).strip()
        new = r.remember.sub("", new, count=1).strip()
        if new == s:
            break
        s = new
    s = re.sub(r",?\s*please[.!]?$", "", s, flags=re.IGNORECASE).strip()
    s = re.sub(r"^please\s+", "", s, flags=re.IGNORECASE)
    if s and s[0].islower():
        s = s[0].upper() + s[1:]
    return s, acknowledged


_USER_PRONOUNS = (
    (r"^I really prefer\b", "The user really prefers"),
    (r"^I prefer\b", "The user prefers"),
    (r"^I like\b", "The user likes"),
    (r"^I love\b", "The user loves"),
    (r"^I hate\b", "The user hates"),
    (r"^I dislike\b", "The user dislikes"),
    (r"^I want\b", "The user wants"),
    (r"^I need\b", "The user needs"),
    (r"^I(?:'d| would) rather\b", "The user would rather"),
    (r"^I (?:don't|do not) want\b", "The user does not want"),
    (r"^I (?:don't|do not) like\b", "The user does not like"),
    (r"^I (?:don't|do not) use\b", "The user does not use"),
    (r"^I never\b", "The user never"),
    (r"^I always\b", "The user always"),
    (r"^My\b", "The user's"),
    (r"^Let's\b", "We decided to"),
)


def _rewrite(sentence: str, role: str) -> str:
    """Third person for the person's own words; a full stop at the end."""
    from bli_memory.core.extraction.rephrase import attribute_user, home_to_tilde, product_case

    s = product_case(home_to_tilde(sentence))
    if role == "user":
        s = attribute_user(s)
    elif role == "text":
        s = re.sub(r"^Let's\b", "We decided to", s, count=1)
    s = s.rstrip()
    if s and (s[-1].isalnum() or s.endswith(("`", ")", '"', "'"))):
        s += "."
    return s


def _classify(sentence: str, role: str, *, answers_question: bool = False) -> StatementKind | None:
    """The kind of a durable statement, or None to drop it.

    Args:
        sentence: One cleaned sentence.
        role: ``user``, ``assistant`` or ``text`` (no role markers).
        answers_question: The sentence is in a reply to a question; a bare fact then
            needs a concrete project anchor (inline code or a path), since answers to
            questions are mostly general explanation.
    """
    r = _rules()
    s = sentence.strip()
    low = s.lower()
    words = re.findall(r"[\w'./:@`-]+", s)
    if len(words) < 4 or len(s) > MAX_STATEMENT_CHARS:
        return None
    if s.endswith(("?", ":")) or (r.question_start.match(s) and not s.endswith((".", "!"))):
        return None
    if r.chit_chat.match(s) or r.transient.match(s):
        return None
    if role == "assistant" and (r.promise.match(s) or r.future.search(s) or r.progressive.match(s)):
        return None
    specifics = specific_terms(s)
    if not specifics and len(content_terms(s)) < 3:
        return None  # "Stick to that from now on": nothing self-contained to keep
    has_code = bool(re.search(_CODE_SPAN, s))
    narrated = bool(r.narration.match(s))

    if r.fix.search(s) and (specifics or r.error_token.search(s) or "because" in low):
        return "fix"
    if r.trouble.search(s) and r.cause.search(s):
        return "fix"
    if r.decision.search(s):
        # "I switched the waits to X": a change made in the code, not a choice to profile.
        return "fact" if narrated else "decision"
    if r.preference.search(s):
        return "preference"
    if narrated:
        # "I set X in Y so the suite behaves the same": a change kept with its reason.
        if r.purpose.search(s) and specifics:
            return "convention"
        return None
    if r.convention.search(s) or (role in ("user", "text") and r.imperative.match(s)):
        return "convention"
    if r.procedure.search(s) and specifics:
        return "command"
    if has_code and r.command_verb.search(s):
        for span in re.findall(_CODE_SPAN, s):
            span = span.strip()
            # A known tool, or "word arg ..." with no call syntax: `mkdocs gh-deploy`.
            if r.command_word.match(span) or re.fullmatch(r"[a-z][\w.-]*(?:\s+[-\w./:=@,+]+)+", span):
                return "command"
    # A bare pronoun subject ("It is in utils/", "That runs on 8080") points at
    # something said earlier, so the sentence cannot stand alone.
    anaphoric = re.match(
        r"^(?:it|this|that|they|these|those|which)\s+(?:is|are|was|were|has|have|had|will|would|"
        r"should|can|could|does|do|did|runs?|uses?|lives?|means?|goes|sits?|needs?|holds?|"
        r"reads?|loads?|calls?|points?|happens?|shows?|comes?|fails?|works?)\b",
        low,
    )
    if specifics and r.stative.search(s) and not anaphoric:
        if answers_question and not (has_code or re.search(r"\w/\w|\w\.\w{1,5}\b", s)):
            return None
        return "fact"
    return None


def _is_question(body: str) -> bool:
    """True when a person's turn asks something rather than states or instructs."""
    text = body.strip()
    return text.endswith("?") or bool(_rules().question_start.match(text) and "." not in text[:-1])


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
        """See :meth:`Extractor.extract`.

        Each candidate sentence (:func:`bli_memory.core.extraction.candidates.candidates`) the
        rules keep is rewritten to stand alone (:func:`_rewrite`); repeats are dropped.
        """
        from bli_memory.core.extraction.candidates import candidates

        out: list[Statement] = []
        seen: set[str] = set()
        for c in candidates(text):
            if not c.rule_keep:
                continue
            statement = _rewrite(c.text, c.role)
            key = " ".join(statement.lower().split())
            if key in seen:
                continue
            seen.add(key)
            out.append(Statement(text=statement, kind=c.kind or "fact"))
            if len(out) >= MAX_STATEMENTS:
                return out
        return out


# =================================================================================
# The OpenAI-compatible extractor
# =================================================================================

_SYSTEM_PROMPT = """\
You keep the long-term memory of a software project for coding agents.
From the conversation excerpt, list the durable statements worth remembering in later
sessions: decisions and their reasons, the person's preferences, project conventions,
facts about the project (paths, services, versions, hosts), commands that worked, and
fixes to errors (the error and its cause or fix). Skip greetings, thanks, questions,
plans, progress reports and anything only true for this moment.
Write each statement as one self-contained sentence in the third person ("The user
prefers ...", "The project uses ..."). Never include secrets or [REDACTED] values.
Answer with JSON only: {"facts": [{"text": "...", "kind": "decision|preference|convention|fact|command|fix"}]}
and {"facts": []} when nothing is worth keeping."""


def _chat_url(base: str) -> str:
    base = base.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return base + "/chat/completions"


def _json_object(content: str) -> Any:
    """The first JSON object or array in a model's answer (code fences tolerated)."""
    text = content.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    for opener in ("{", "["):
        start = text.find(opener)
        if start < 0:
            continue
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
            return obj
        except ValueError:
            continue
    raise ValueError("no JSON in the answer")


class ChatCompletionsExtractor:
    """Extraction by any OpenAI-compatible chat completions endpoint.

    Args:
        url: Base URL (``http://127.0.0.1:11434/v1``) or the full
            ``.../chat/completions`` URL.
        model: Model name sent in the request.
        api_key: Bearer token, or None for endpoints without auth.
        timeout: Seconds for the whole request.
        transport: An httpx transport (tests and custom networking); default: httpx's.

    The request is one ``POST`` with ``temperature: 0`` and a system prompt asking
    for ``{"facts": [{"text", "kind"}]}`` JSON (OpenAI Chat Completions API,
    ``choices[0].message.content``).
    """

    name = "openai"

    def __init__(
        self,
        url: str,
        *,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        transport: Any | None = None,
    ) -> None:
        self.url = _chat_url(url)
        self.model = model
        self._api_key = api_key
        self.timeout = timeout
        self._transport = transport

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatCompletionsExtractor:
        """Build it from ``BLI_MEMORY_EXTRACT_URL``/``_MODEL``/``_API_KEY``.

        Raises:
            ConfigError: no URL or no model is configured.
        """
        from bli_memory.core.errors import ConfigError

        if not settings.extract_url:
            raise ConfigError("BLI_MEMORY_EXTRACT_URL is not set", reason="config_invalid")
        if not settings.extract_model:
            raise ConfigError("BLI_MEMORY_EXTRACT_MODEL is not set", reason="config_invalid")
        key = settings.extract_api_key.get_secret_value() if settings.extract_api_key else None
        return cls(settings.extract_url, model=settings.extract_model, api_key=key)

    def extract(self, text: str) -> list[Statement]:
        """See :meth:`Extractor.extract`.

        Raises:
            ServiceError: reason ``timeout``, ``dashboard_unreachable`` (no connection),
                ``http_<status>`` or ``bad_response`` (an answer that is not the JSON
                asked for).
        """
        import httpx

        from bli_memory.core.errors import ServiceError
        from bli_memory.core.hooks.blocks import strip_injected

        body = strip_injected(text or "").strip()
        if not body:
            return []
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        payload = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": _SYSTEM_PROMPT},
                {"role": "user", "content": body},
            ],
        }
        try:
            with httpx.Client(timeout=self.timeout, transport=self._transport) as client:
                response = client.post(self.url, json=payload, headers=headers)
        except httpx.TimeoutException as exc:
            raise ServiceError("the extraction endpoint timed out", reason="timeout") from exc
        except httpx.HTTPError as exc:
            raise ServiceError(
                "the extraction endpoint is unreachable", reason="dashboard_unreachable"
            ) from exc
        if response.status_code >= 400:
            raise ServiceError(
                f"the extraction endpoint answered HTTP {response.status_code}",
                reason=f"http_{response.status_code}",
            )
        try:
            content = response.json()["choices"][0]["message"]["content"]
            data = _json_object(content)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ServiceError(
                "the extraction endpoint's answer is not usable", reason="bad_response"
            ) from exc
        items = data.get("facts", []) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ServiceError("the extraction endpoint's answer is not usable", reason="bad_response")
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
            kind = str(item.get("kind", "fact")).lower()
            seen.add(statement.lower())
            out.append(Statement(text=statement, kind=kind if kind in KINDS else "fact"))  # type: ignore[arg-type]
            if len(out) >= MAX_STATEMENTS:
                break
        return out


# =================================================================================
# Registration and choice
# =================================================================================


def _openai_from_env() -> ChatCompletionsExtractor:
    from bli_memory.core.settings import load_settings

    return ChatCompletionsExtractor.from_settings(load_settings())


@hookimpl
def register_extractors(register: Callable[[str, Callable[[], Any]], None]) -> None:
    """Register the built-in extractors: ``default`` (rules) and ``openai`` (an endpoint)."""
    register("default", RuleExtractor)
    register("openai", _openai_from_env)


def _plugin_modules(settings: Settings) -> list[str]:
    raw = settings.extract_plugins or ""
    return [m.strip() for m in raw.split(",") if m.strip()]


def available_extractors(
    pm: pluggy.PluginManager | None = None, *, settings: Settings | None = None
) -> dict[str, Callable[[], Any]]:
    """Every registered extractor factory by name.

    Args:
        pm: A plugin manager (default: :func:`~bli_memory.core.plugins.get_plugin_manager`).
        settings: Settings naming extra plugin modules (``BLI_MEMORY_EXTRACT_PLUGINS``).

    Raises:
        ConfigError: a module named in ``BLI_MEMORY_EXTRACT_PLUGINS`` cannot be imported.
    """
    import importlib

    from bli_memory.core.errors import ConfigError

    if settings is None:
        from bli_memory.core.settings import load_settings

        settings = load_settings()
    if pm is None:
        from bli_memory.core.plugins import get_plugin_manager

        pm = get_plugin_manager()
    for module_name in _plugin_modules(settings):
        if pm.has_plugin(module_name):
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(
                f"BLI_MEMORY_EXTRACT_PLUGINS names {module_name!r}, which cannot be imported",
                reason="config_invalid",
            ) from exc
        pm.register(module, name=module_name)
    factories: dict[str, Callable[[], Any]] = {}

    def register(name: str, factory: Callable[[], Any]) -> None:
        factories[name] = factory

    pm.hook.register_extractors(register=register)
    return factories


def get_extractor(
    pm: pluggy.PluginManager | None = None, *, settings: Settings | None = None, name: str | None = None
) -> Extractor:
    """The extractor to use: ``name``, else ``BLI_MEMORY_EXTRACTOR``, else ``openai`` when
    ``BLI_MEMORY_EXTRACT_URL`` is set, else ``default``.

    Raises:
        ConfigError: the chosen name is not registered, or its configuration is incomplete.
    """
    from bli_memory.core.errors import ConfigError

    if settings is None:
        from bli_memory.core.settings import load_settings

        settings = load_settings()
    chosen = name or settings.extractor or ("openai" if settings.extract_url else "default")
    if chosen == "default" and not _plugin_modules(settings) and pm is None:
        return RuleExtractor()  # the common case needs no plugin manager
    factories = available_extractors(pm, settings=settings)
    if chosen not in factories:
        raise ConfigError(
            f"no extractor named {chosen!r}; registered: {', '.join(sorted(factories))}",
            reason="config_invalid",
        )
    if factories[chosen] is _openai_from_env:
        extractor: Any = ChatCompletionsExtractor.from_settings(settings)  # the settings given
    else:
        extractor = factories[chosen]()
    if not hasattr(extractor, "name"):
        extractor.name = chosen
    return extractor  # type: ignore[no-any-return]
