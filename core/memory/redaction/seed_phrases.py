"""A wallet's recovery phrase: 12 to 24 words of the BIP-39 English word list in a row.

A recovery (seed) phrase is the whole key to a wallet, written as plain words, so no
sign of a secret marks it but the words themselves. BIP-39 draws them from a fixed list
of 2,048 words (``data/bip39_english.txt``, from the ``mnemonic`` reference package,
MIT; the list is the one in BIP-0039). Ordinary prose never holds twelve of them in a
row: over this project's documents and the design seeds (1.6 MB of English and code)
the longest run is 7, because the list leaves out many words sentences are built with
("the", "is", "a", "of", "to", "and"). It holds others ("you", "can", "when", "this"),
and a sentence can be made of list words alone, so a run of :data:`MIN_WORDS` or more
list words, in any case, separated by spaces, commas, line breaks, list numbers or
quotes, is masked whole when
it holds no more of those sentence words than a random phrase would (:func:`_is_phrase`).

The word list becomes one regular expression shaped as a trie (each word's letters
branch off a shared prefix), so a word is matched in about its own length, and a run
is tried at most :data:`MAX_WORDS` words from each start: matching stays linear.
"""

from __future__ import annotations

import re
from pathlib import Path

from bli_memory.core.memory.redaction.rule import RedactionRule

__all__ = ["MAX_WORDS", "MIN_WORDS"]

MIN_WORDS = 12
"""The shortest phrase BIP-39 defines (128 bits of entropy)."""
MAX_WORDS = 24
"""The longest phrase BIP-39 defines (256 bits of entropy)."""

_WORDS = (Path(__file__).parent / "data" / "bip39_english.txt").read_text(encoding="ascii").split()


_Trie = dict[str, "_Trie"]


def _trie_pattern(words: list[str]) -> str:
    """One alternation of ``words`` as a trie: ``ab(?:andon|ility|le)`` for three words."""
    trie: _Trie = {}
    for word in words:
        node = trie
        for letter in word:
            node = node.setdefault(letter, {})
        node[""] = {}

    def render(node: _Trie) -> str:
        branches = [letter + render(child) for letter, child in sorted(node.items()) if letter]
        ends = "" in node
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and not ends else "(?:" + "|".join(branches) + ")"
        return body + ("?" if ends else "")

    return render(trie)


_WORD = rf"(?i:{_trie_pattern(_WORDS)})(?![A-Za-z])"
# Between two words: spaces, a comma or another separator, a line break, a list number
# or bullet ("1. lizard\n2. resource", as wallets show them), quotes (a JSON or Python
# list). Every part is possessive, so a long run of spaces is read once.
_GAP = (
    r"""(?:["']?+[ \t]*+(?:[,;|/-][ \t]*+)?+(?:\r?\n[ \t]*+)?+"""
    r"""(?:(?:\d{1,2}[.):]|[-*\u2022])[ \t]++)?+["']?+)"""
)
# A run may take a few more words than a phrase has: list words just before a phrase
# ("use this seed ...") must not push its last words out of the match.
_RUN_MAX = MAX_WORDS + 8

# The list's words that English sentences are built with. A recovery phrase draws its
# words at random, so it holds about 0.34 of these in 12 words (58 of 2,048): more than
# two in 12, or one more for each 6 words after, is a sentence ("use this tool when you
# want more control over any other project"), not a phrase. About 0.4 % of random
# 12-word phrases hold three and are missed; a sentence of list words holds many more.
_SENTENCE_WORDS = frozenset(
    "about again all also always any because before between can come day few first give good have"
    " into just know like make more must need never now off often once one only other over own"
    " people same say still that then there they this time two under use very want way what when"
    " where will work year you".split()
)
_WORD_RUN = re.compile(r"[a-z]+")


def _is_phrase(run: str) -> bool:
    """Whether a run of list words reads as a recovery phrase rather than a sentence."""
    words = _WORD_RUN.findall(run.lower())
    allowed = 2 + max(0, len(words) - MIN_WORDS) // 6
    return sum(word in _SENTENCE_WORDS for word in words) <= allowed


_SEED_PHRASE_RULES = (
    RedactionRule(
        "seed_phrase",
        re.compile(rf"(?<![A-Za-z-]){_WORD}(?:{_GAP}{_WORD}){{{MIN_WORDS - 1},{_RUN_MAX - 1}}}"),
        accept=_is_phrase,
    ),
)
