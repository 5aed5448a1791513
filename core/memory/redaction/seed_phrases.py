"""A wallet's recovery phrase: 12 to 24 words of the BIP-39 English word list in a row.

A recovery (seed) phrase is the whole key to a wallet, written as plain words, so no
sign of a secret marks it but the words themselves. BIP-39 draws them from a fixed list
of 2,048 words (``data/bip39_english.txt``, from the ``mnemonic`` reference package,
MIT; the list is the one in BIP-0039). Ordinary prose never holds twelve of them in a
row: over this project's documents and the design seeds (1.6 MB of English and code)
the longest run is 7, because the list leaves out the words sentences are built with
("the", "is", "a", "of", "to", "and"). So a run of :data:`MIN_WORDS` or more list words,
lowercase, separated by spaces, line breaks or commas, is masked whole.

The word list becomes one regular expression shaped as a trie (each word's letters
branch off a shared prefix), so a word is matched in about its own length, and a run
is tried at most :data:`MAX_WORDS` words from each start: matching stays linear.
"""

from __future__ import annotations

from pathlib import Path

from bli_memory.core.memory.redaction.patterns import _rule

__all__ = ["MAX_WORDS", "MIN_WORDS"]

MIN_WORDS = 12
"""The shortest phrase BIP-39 defines (128 bits of entropy)."""
MAX_WORDS = 24
"""The longest phrase BIP-39 defines (256 bits of entropy)."""

_WORDS = (Path(__file__).parent / "data" / "bip39_english.txt").read_text(encoding="ascii").split()


def _trie_pattern(words: list[str]) -> str:
    """One alternation of ``words`` as a trie: ``ab(?:andon|ility|le)`` for three words."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for letter in word:
            node = node.setdefault(letter, {})
        node[""] = {}

    def render(node: dict[str, dict]) -> str:
        branches = [letter + render(child) for letter, child in sorted(node.items()) if letter]
        ends = "" in node
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and not ends else "(?:" + "|".join(branches) + ")"
        return body + ("?" if ends else "")

    return render(trie)


_WORD = rf"(?:{_trie_pattern(_WORDS)})(?![A-Za-z])"
_GAP = r"(?:,?[ \t]+|,?[ \t]*\r?\n[ \t]*|,)"

_SEED_PHRASE_RULES = (
    _rule("seed_phrase", rf"(?<![A-Za-z-]){_WORD}(?:{_GAP}{_WORD}){{{MIN_WORDS - 1},{MAX_WORDS - 1}}}"),
)
