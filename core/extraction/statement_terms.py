"""Words of a statement: the specific values it names, its subject matter, its polarity.

The default extractor uses these to judge whether a sentence stands alone; reconcile and
tombstones use them to compare what two statements say (same subject, same values,
opposite polarity). Pure functions; the standard library only, the embedding model's
vocabulary read once on first use.
"""

from __future__ import annotations

import json
import re
from functools import cache

__all__ = ["CODE_SPAN", "content_terms", "negated", "specific_terms"]

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
#: Inline code in a statement: one backtick-quoted span of at most 200 characters on one line.
CODE_SPAN = r"`([^`\n]{1,200})`"
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
    for span in re.findall(CODE_SPAN, text):
        out.add(span.strip().lower())
    plain = re.sub(CODE_SPAN, " ", text)
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
    plain = re.sub(CODE_SPAN, lambda m: " " + m.group(1) + " ", text)
    out = set()
    for m in re.finditer(_WORD, plain):
        low = m.group(0).lower()
        if low in _STOPWORDS or low in _NEGATIONS or low.endswith("n't"):
            continue
        out.add(_stem(low))
    return frozenset(out)


def negated(text: str) -> bool:
    """True when the statement is negative (odd number of negations; ``never``, ``no``, ...)."""
    words = re.findall(r"[a-z']+", re.sub(CODE_SPAN, " ", text).lower())
    count = sum(1 for w in words if w in _NEGATIONS or w.endswith("n't"))
    # "no longer X" announces a change (reconcile supersedes), it does not contradict X.
    count += text.lower().count("no longer")
    return count % 2 == 1

