"""Kept statements as self-contained facts: third person, no home paths, product names cased.

The default extractor (:class:`~bli_memory.core.extraction.rule_extractor.RuleExtractor`) keeps sentences
of the conversation. A later session reads them without the conversation around them, so
each is rewritten here before it is stored:

- **The person's words become a fact about them.** "I am running Claude Code on wsl"
  becomes "The user runs Claude Code on WSL."; "we decided to ..." becomes "The team
  decided to ..."; "my editor is ..." becomes "The user's editor is ...". A sentence of the
  person's with no first-person subject ("Production deploys go to Heroku.") is attributed
  ("Per the user, production deploys go to Heroku."), so no prompt is ever stored word for
  word.
- **Absolute home paths become ``~``.** ``/home/jim/.claude/projects`` and
  ``/Users/nik/Code/app`` become ``~/.claude/projects`` and ``~/Code/app``, whoever's home
  they are (the running user's ``$HOME`` too, wherever it is). Project-relative paths
  (``docs/ASSIGNMENT.md``) and system paths (``/etc/...``) stay as they are.
- **Product names get their usual case** when a person typed them in lower case
  (``wsl`` -> ``WSL``, ``claude code`` -> ``Claude Code``); the list is
  :data:`PRODUCT_NAMES`.

Pure functions of the text; the standard library only (imported by the worker, not the hooks).
"""

from __future__ import annotations

import os
import re

__all__ = [
    "PRODUCT_NAMES", "attribute_user", "home_to_tilde", "ignore_entry", "label_value", "list_intro",
    "product_case", "project_subject", "standalone", "user_clauses",
]

#: Lower-case spellings people type, and the product's own spelling.
PRODUCT_NAMES: dict[str, str] = {
    "wsl": "WSL", "wsl2": "WSL2", "claude code": "Claude Code", "macos": "macOS", "github": "GitHub",
    "gitlab": "GitLab", "vscode": "VS Code", "vs code": "VS Code", "ios": "iOS", "linux": "Linux",
    "windows": "Windows", "ubuntu": "Ubuntu", "debian": "Debian", "docker": "Docker",
    "postgres": "Postgres", "postgresql": "PostgreSQL", "sqlite": "SQLite", "mysql": "MySQL",
    "python": "Python", "node": "Node", "node.js": "Node.js", "typescript": "TypeScript",
    "javascript": "JavaScript", "codex cli": "Codex CLI", "gemini cli": "Gemini CLI", "jsonl": "JSONL",
}

# /home/<name>/, /Users/<name>/, C:\Users\<name>\ and /root/ (the account's home on Linux,
# macOS, Windows and WSL's /mnt/c view of it).
_HOME = re.compile(
    r"(?<![\w.~/-])(?:/home/[^/\s`'\")]+|/Users/[^/\s`'\")]+|/root(?=/)|"
    r"/mnt/[a-z]/Users/[^/\s`'\")]+|[A-Za-z]:\\\\?Users\\\\?[^\\\s`'\")]+)(?=[/\\]|[\s`'\").,;:]|$)"
)


def home_to_tilde(text: str) -> str:
    """Replace absolute home directories with ``~`` (``/home/jim/x`` -> ``~/x``).

    Args:
        text: One statement.

    Returns:
        The statement; unchanged when it names no home directory.
    """
    home = os.path.expanduser("~").rstrip("/\\")
    if len(home) > 1 and home in text:
        text = re.sub(re.escape(home) + r"(?=[/\\\s`'\").,;:]|$)", "~", text)
    return _HOME.sub("~", text).replace("~\\", "~/")


def product_case(text: str) -> str:
    """Give product names typed in lower case their usual spelling (:data:`PRODUCT_NAMES`)."""
    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        return PRODUCT_NAMES.get(word.lower(), word) if word.islower() else word

    names = sorted(PRODUCT_NAMES, key=len, reverse=True)
    pattern = r"(?<![\w./-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w/-])"
    plain = re.split(r"(`[^`]*`)", text)  # never inside inline code
    return "".join(p if p.startswith("`") else re.sub(pattern, fix, p) for p in plain)


# (pattern at the start of a person's sentence, replacement); first match wins. Present
# progressive of a setup ("I am running X") is a standing fact: simple present.
_FIRST_PERSON: tuple[tuple[str, str], ...] = (
    (r"^i(?:'m| am) (?:currently |usually )?running\b", "The user runs"),
    (r"^i(?:'m| am) (?:currently |usually )?using\b", "The user uses"),
    (r"^i(?:'m| am) (?:currently )?(?:working|developing|coding) (on|in|with)\b", r"The user works \1"),
    (r"^i(?:'m| am) on\b", "The user is on"),
    (r"^i(?:'m| am)\b", "The user is"),
    (r"^i(?:'ve| have) got\b", "The user has"),
    (r"^i(?:'ve| have)\b", "The user has"),
    (r"^(often|usually|sometimes|typically|always|normally),? i have\b", r"The user \1 has"),
    (r"^(often|usually|sometimes|typically|always|normally),? i (\w+)\b", r"The user \1 \2s"),
    (r"^i (?:really )?prefer\b", "The user prefers"),
    (r"^i(?:'d| would) (?:really )?prefer\b", "The user prefers"),
    (r"^i(?:'d| would) rather\b", "The user would rather"),
    (r"^i(?:'d| would) (?:really )?like\b", "The user wants"),
    (r"^i (?:don't|do not) want\b", "The user does not want"),
    (r"^i (?:don't|do not) like\b", "The user does not like"),
    (r"^i (?:don't|do not) use\b", "The user does not use"),
    (r"^i (?:don't|do not)\b", "The user does not"),
    (r"^i never\b", "The user never"),
    (r"^i always\b", "The user always"),
    (r"^i (often|usually|sometimes|typically|normally) (\w+)\b", r"The user \1 \2s"),
    (r"^i (like|love|hate|dislike|want|need|use|run|have|work|keep|develop|deploy|host|"
     r"prefer|build|test|write|name|store|put)\b", r"The user \1s"),
    (r"^my\b", "The user's"),
    (r"^let's\b", "The team decided to"),
    (r"^we(?:'re| are) (?:currently )?(?:using|on)\b", "The team uses"),
    (r"^we(?:'ve| have) (decided|chosen|picked|agreed|settled|moved|switched|migrated)\b", r"The team \1"),
    (r"^we(?:'re| are)\b", "The team is"),
    (r"^we were\b", "The team was"),
    (r"^we(?:'ve| have)\b", "The team has"),
    (r"^we\b", "The team"),
    (r"^our\b", "The project's"),
)

_VERB_S = {"haves": "has", "dos": "does", "gos": "goes", "uses": "uses", "runss": "runs"}


_NOT_BASE = frozenset(
    "can could will would should must may might shall did had was is does has also only still never "
    "always often usually just all both really".split()
)
_ADVERBS = ("always", "never", "often", "usually", "also", "only", "still", "normally", "typically")


def _agree(subject: str, rest: str) -> str:
    """``subject`` + ``rest`` with the first verb of ``rest`` in the third person singular."""
    words = rest.split(" ")
    k = 1 if words and words[0] == "" else 0
    while k < len(words) and words[k].lower() in _ADVERBS:
        k += 1
    if k < len(words):
        w = words[k]
        low = w.lower()
        if low == "do":
            words[k] = "does"
        elif low == "are":
            words[k] = "is"
        elif low == "have":
            words[k] = "has"
        elif low.isalpha() and low not in _NOT_BASE and not low.endswith(("ed", "s")):
            words[k] = w + ("es" if low.endswith(("sh", "ch", "x", "o", "z")) else "s")
    return subject + " ".join(words)


def attribute_user(sentence: str) -> str:
    """A sentence of the person's as a self-contained fact about them or their project.

    Args:
        sentence: One cleaned sentence from the person's turn (fillers already removed).

    Returns:
        The third-person fact, starting with "The user", "The team", "The project's" or
        "Per the user,"; never the sentence itself.
    """
    s = sentence.strip()
    low = s.lower()
    for pattern, repl in _FIRST_PERSON:
        m = re.match(pattern, low)
        if m:
            head = m.expand(repl)
            for wrong, right in _VERB_S.items():
                head = re.sub(rf"\b{wrong}\b", right, head)
            out = head + s[m.end():]
            if head == "The team":
                out = _agree("The team", s[m.end():])
            break
    else:
        if low.startswith(("the user", "the team", "per the user")):
            out = s
        else:
            out = "Per the user, " + (s[0].lower() + s[1:] if s[:1].isupper() and not s[:2].isupper() else s)
    if out.startswith(("The user", "The team", "The project's", "Per the user")):
        out = re.sub(r"\bmy\b", "the user's", out)
        out = re.sub(r"\b(?:I'm|I am)\b", "the user is", out)
        out = re.sub(r"\bI\b", "the user", out)
        out = re.sub(r"\bme\b", "the user", out)
        out = re.sub(r"\bour\b", "the project's", out)
    return out


_CLAUSE = re.compile(
    r"(?:(?<=[.!?])\s+(?=[a-z]))|(?:,?\s+(?:and|but|so)\s+(?=(?:i|i'm|i've|we|we're|my|our|keep in mind|"
    r"please|also)\b))|(?:;\s+)",
    re.IGNORECASE,
)


def user_clauses(sentence: str) -> list[str]:
    """Split a person's run-on sentence into clauses that can each stand alone.

    People type prompts with lower-case sentence starts and chains of "and I ...", "but
    keep in mind ...": "I am running Claude Code on wsl and I would like to create a
    process ..." is two statements, one a durable setup fact and one a request.
    """
    parts = [p.strip(" ,") for p in _CLAUSE.split(sentence) if p and p.strip(" ,")]
    return parts or [sentence]


_LABEL = re.compile(
    r"^[^\w`]*([A-Z][A-Za-z][A-Za-z /-]{1,40}?)\s*(?::\s+(`[^`]+`(?:\s*\([^)]*\))?)|\((`[^`]+`)\))\.?$")
_LABEL_SKIP = re.compile(
    r"\b(?:current|this|that|these|latest|last|new|now|today|total|status|result|example|"
    r"for|from|in|on|at|of|to|with|option|step|usage|commit|hash|sha|date|time|duration|size)\b",
    re.IGNORECASE)


#: A label that opens with a verb is advice ("Use exact pinning (`==`)"), not a noun phrase.
_IMPERATIVE_LABEL = (r"^(?:use|keep|add|run|set|make|avoid|prefer|try|consider|update|pin|install|remove|"
                     r"enable|disable)\b")


def label_value(sentence: str) -> str:
    """``Session storage location: `~/.claude/projects/``` as a sentence.

    A summary line "Label: `value`" names a standing fact when the label is a plain noun
    phrase; it becomes "The session storage location is `~/.claude/projects/`.". Labels
    about the moment or about an example ("Current session", "For this project", "Output")
    are returned unchanged (and then dropped, having no verb).
    """
    m = _LABEL.match(sentence.strip())
    if not m or _LABEL_SKIP.search(m.group(1)) or re.match(_IMPERATIVE_LABEL, m.group(1), re.I):
        return sentence
    words = [w if w.isupper() and len(w) > 1 else w.lower() for w in m.group(1).split()]
    return f"The {' '.join(words)} is {m.group(2) or m.group(3)}."


_REPORTING = re.compile(
    r"^(?:it |this |the (?:file|doc|document|readme|guide|spec) )?(?:establishes|states|says|explains|notes|"
    r"confirms|shows|clarifies|specifies|documents|describes|mentions|stresses|makes clear) that\s+(.+)$",
    re.IGNORECASE,
)
_THIS_IS = re.compile(
    r"^this is (an? (?:[\w.-]+ ){0,6}(?:project|repo|repository|app|application|site|website|codebase|"
    r"library|package|tool|service|cli|server|plugin|extension|monorepo)(?=\s+(?:for|that|which|built|"
    r"written|using|with|in|on|to)\b|\s*[-\u2013\u2014,.:;]|$).*)$",
    re.IGNORECASE,
)


def standalone(sentence: str) -> str:
    """Make a summary sentence stand alone without the text around it.

    "Establishes that the project follows the X doctrine." (a bullet under the file it
    describes) becomes "The project follows the X doctrine."; "This is a static website
    project for NiceHR." becomes "The project is a static website project for NiceHR.".
    Anything else is returned unchanged.
    """
    s = sentence.strip()
    m = _REPORTING.match(s)
    if m:
        rest = m.group(1)
        return rest[0].upper() + rest[1:]
    m = _THIS_IS.match(s)
    if m:
        return "The project is " + m.group(1)
    return sentence


def list_intro(sentence: str) -> str:
    """The statement inside a sentence that introduces a list.

    "This is a static website project for NiceHR - appears to be a company website with
    pages for:" ends in a colon, so on its own it says nothing; its first clause is a
    statement and is returned ("This is a static website project for NiceHR."). A
    sentence that does not end in a colon, or whose first clause has fewer than four
    words, is returned unchanged.
    """
    s = sentence.strip()
    if not s.endswith(":"):
        return sentence
    head = re.split(r"\s+[-\u2013\u2014]\s+", s, maxsplit=1)[0]
    if head == s or len(head.split()) < 4:
        return sentence
    return head.rstrip(" ,;") + "."


_REQUIREMENT = re.compile(
    r"^it(?:'s| is)? (also |still |really )?(needs? to|must|should|has to|is required to|requires)\b",
    re.IGNORECASE,
)


def project_subject(sentence: str) -> str:
    """A requirement the person states about "it" is about the project being built.

    "It needs to be posted as a public repo on GitHub." becomes "The project needs to be
    posted as a public repo on GitHub."; other sentences are returned unchanged.
    """
    m = _REQUIREMENT.match(sentence.strip())
    if not m:
        return sentence
    return "The project " + (m.group(1) or "") + m.group(2) + sentence.strip()[m.end():]


_IGNORE_ENTRY = (
    r"^(?:i(?:'ve| have)? |we(?:'ve| have)? )?(?:also )?(?:added|add|adding|appended)\s+(.+?)\s+to\s+"
    r"(?:the )?(?:project's |repo's |repository's )?(`?\.(?:git|docker|npm|prettier|eslint)ignore`?)"
    r"(?:\s+(?:file|pattern))?\s*[.:]?$")


def ignore_entry(sentence: str) -> str:
    """A report of an entry added to an ignore file as the standing rule it sets.

    "Added `claude_export_*/` to `.gitignore`" (a line of a change summary) becomes
    "`claude_export_*/` is in `.gitignore`.": what the repository ignores outlives the
    change that added it. Other sentences are returned unchanged.
    """
    m = re.match(_IGNORE_ENTRY, sentence.strip(), re.IGNORECASE)
    if not m:
        return sentence
    return f"{m.group(1)} is in {m.group(2)}."
