"""Is a candidate statement durable? The gate after the extractor's kind rules.

:func:`~bli_memory.core.extraction.classify.classify` says what *kind* of statement a sentence
would be (decision, convention, fact, ...). Many sentences of a real coding session pass
that test and still say nothing a later session can use: completion reports ("The script
has been updated with XML support."), status and results of the moment ("The export is
working.", "The files are identical."), celebration ("🎉 The XML file is now showing!"),
requests for the current task ("Use the --no-verify flag.") and statements about this
session ("Current session: f33c....jsonl"). This module drops those.

Each rule names a *cue* a reader can check, and none names a project, a file or a tool,
so they hold for anyone's sessions:

- **Celebration and status marks**: a statement that opens with an emoji or a check
  mark, or ends in "!" after a word of success.
- **Completion report**: "has been / was / were + done-verb" (created, updated, added,
  fixed, exported, ...), "successfully", "is (now) working/done/complete/ready/in place",
  "now shows/showing" and "are identical", unless the sentence also gives a reason or a
  rule ("because", "so that", "always", "by default", "must").
- **The moment**: "currently", "right now", "at the moment", "so far", "for now", "just
  (now)", "this session", "the current/active session", "the latest run", "confirming",
  "another instance of you" (what a parallel session is doing).
- **Requests for the task at hand** (the person's turn): an instruction with a pronoun
  object ("commit and push it", "only stage the files you changed") or one that names a
  one-off action (commit, push, examine, create, write, test, check, run this), unless it
  carries a cue of generality ("always", "never", "every", "from now on", "by default",
  "in this repo", "whenever", "all").
- **Drawings and proposals**: box-drawing characters (a directory tree), and "My
  recommendation: ...", "I'd suggest ...", "you could ...", "this would ...", "use it
  as ...": an option offered, not a decision taken (the person's answer is what decides).
- **Findings of a search**: "I found", "I discovered", "based on my research", "it turns
  out" (the fact they introduce, when it is one, is kept from its own sentence).
- **Verdicts and identifiers of the moment**: a sentence that opens with "Good,",
  "Perfect!", "Aha," (the assistant's verdict on what it just checked), one that ends in a
  celebration emoji, "is up to date", "is now available", "fully functional", and one that
  names a UUID (it identifies one session, run or request).

Two kinds of durable sentence the kind rules miss are recognised here as well: a
**switch** (a flag or an environment variable with what it turns on or off, "`--no-copy-to-cwd`
flag to disable") and a **root cause** stated as such ("The key fix was changing the default
from 'md' to 'all'").

Measured on real public sessions in ``bench/extraction_sessions.py`` (numbers in
``docs/benchmarks-extraction.md``). Pure functions; the standard library only.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = [
    "gives_reason", "is_context", "is_finding_item", "is_fragment", "is_general", "is_limitation",
    "is_preference",
    "is_root_cause", "is_rule_label", "is_setup", "is_switch", "is_task_request", "is_transient",
    "names_place", "points_back", "teaches", "tells_a_masked_secret",
]

_DONE_VERBS = (
    r"created|updated|added|fixed|removed|deleted|implemented|exported|committed|pushed|"
    r"written|installed|completed|modified|changed|enhanced|improved|refactored|renamed|moved|"
    r"generated|converted|copied|saved|tested|verified|resolved|merged|built|deployed|applied|"
    r"configured|set up|finished|done|included|placed|marked|restored|cleaned"
)


@cache
def _patterns() -> dict[str, re.Pattern[str]]:
    i = re.IGNORECASE
    return {
        "mark": re.compile(r"^[\W_]*[\u2600-\u27bf\U0001F300-\U0001FAFF\u2705\u2714\u274c\u26a0]"),
        "closing_mark": re.compile(r"[!.]?\s*[\u2600-\u27bf\U0001F300-\U0001FAFF]\W*$"),
        "verdict": re.compile(
            r"^(?:good|great|perfect|excellent|ok(?:ay)?|alright|nice|awesome|aha|yes|yep|right)\s*[,!]", i),
        "identifier": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", i),
        "cheer": re.compile(
            r"\b(?:great|perfect|excellent|awesome|success(?:ful(?:ly)?)?|works?|working|done|"
            r"fixed|complete|ready|nice|yay|finally)\b[^.!?]{0,40}!\s*$", i),
        "reason": re.compile(
            r"\b(?:because|so that|so it|since|to avoid|to prevent|always|never|must|by default|"
            r"from now on|going forward|the rule is|convention)\b", i),
        "report": re.compile(
            rf"\b(?:(?:has|have|had) (?:now )?(?:been|got) (?:\w+ly )?(?:{_DONE_VERBS})|"
            rf"(?:was|were) (?:\w+ly )?(?:{_DONE_VERBS})\b(?! (?:to|by|with|for|from|because|as|in)\b)|"
            r"successfully|is (?:now )?(?:working|done|complete|completed|ready|in place|finished|live|"
            r"fixed|resolved|green|passing)\b|are (?:now )?(?:working|done|complete|ready|in place|"
            r"identical|the same|fixed|passing)\b|(?:now|already) (?:shows?|showing|works?|working|"
            r"exists?|has|have|contains?|includes?)\b|is now showing|are now showing|"
            r"(?:it|this|that|everything) (?:works|worked)\b|up[- ]to[- ]date\b|\bin sync\b|"
            r"(?:is|are) now available\b|fully functional\b|ready (?:for|to) use\b|"
            r"^(?:added|updated|fixed|removed|deleted|implemented|created|modified|changed|enhanced|"
            r"improved|refactored|renamed|moved|converted|replaced|clarified|documented|cleaned up|restored|"
            r"rewrote)\b)", i),
        "moment": re.compile(
            r"\b(?:currently|right now|at the moment|so far|for now|just now|as of now|"
            r"this (?:session|chat|conversation|run|turn|time)|(?:the|our) (?:current|active|present) "
            r"(?:session|chat|conversation|run|state)|current session|the latest run|confirming|"
            r"just (?:created|updated|added|fixed|ran|made|wrote|modified|changed|finished)|"
            r"pid \d+|process id \d+|(?:another|other|one) (?:instance|session|copy) of you|"
            r"(?:over|during|in) the (?:work )?session|(?:over|in) the (?:past|last) "
            r"(?:few )?(?:hours?|minutes?|days?))\b|^(?:assessment|summary|status|result|results|verdict|"
            r"conclusion|outcome|analysis|progress|recap|tl;?dr|actions taken|next steps?|overall)\s*:|"
            r"\b(?:correctly|properly|incorrectly) (?:uses?|used|set|named|formatted|qualified)\b|"
            r"\bthe (?:test|tests|build|check|checks|run|suite) (?:is|are|was|were) (?:now |still )?"
            r"(?:failing|passing|broken|green|red|running)\b|"
            r"\b(?:most|all|some|none) (?:of them )?(?:are|were|is) "
            r"(?:compliant|correct|fine|ok|good|valid)\b|"
            r"^(?:the )?main (?:issues|problems|findings|violations) (?:are|were)\b|"
            r"\bmaking it (?:easy|easier|simple|simpler|possible|perfect|ideal)\b|\bperfect for your\b", i),
        "proposal": re.compile(
            r"^(?:(?:my )?recommendations?\s*:|i(?:'d| would)? (?:recommend|suggest|propose)|i recommend|"
            r"we could|you could|you might|consider\b|one option|alternatively|an alternative|"
            r"option [a-z1-9]\b|"
            r"this (?:would|could|might|gets)|that (?:would|could|might|gets)|"
            r"(?:use|keep|move|put|frame|position|highlight|include|treat|present) "
            r"(?:it|this|that|them)\b)", i),
        "finding": re.compile(
            r"^(?:i (?:found|discovered|noticed|see|can see|checked|verified|confirmed)|"
            r"based on (?:my|the) (?:research|analysis|findings|review)|it turns out|"
            r"looks like|it seems|i've (?:found|discovered|noticed|confirmed|verified))\b", i),
        "pronoun_object": re.compile(
            r"\b(?:commit|push|stage|run|do|fix|try|test|check|update|change|send|ship|merge|"
            r"revert|delete|remove|open|examine|review|read|create|write|make)\b[^.]{0,20}\b(?:it|this|"
            r"that|them|these|those)\b|\bthe files? you (?:changed|modified|edited|touched|created)\b", i),
        "one_off": re.compile(
            r"^(?:please\s+)?(?:make sure|ensure|double[- ]check|verify|confirm|commit|push|stage|examine|"
            r"create|write|build|add|make|fix|try|test|"
            r"check|look|show|tell|explain|find|search|research|update|change|rename|delete|remove|"
            r"install|run|open|go ahead|proceed|continue|implement|review|draft|generate|convert|"
            r"initiali[sz]e|set up|read|do(?! not\b)|move|copy|start|finish|redo|undo|revert)\b", i),
        "general": re.compile(
            r"\b(?:always|never|every|each time|from now on|going forward|by default|in this repo|"
            r"in this project|whenever|all (?:of )?(?:the|our)?\s*\w+|any time|in general|as a rule)\b", i),
        "check_request": re.compile(
            r"^(?:please\s+)?(?:make sure|ensure|double[- ]check|verify|confirm)\b", i),
        "standing": re.compile(
            r"\b(?:always|never|every time|each time|from now on|going forward|by default|whenever|"
            r"before (?:every|each)|"
            r"in this (?:repo|project))\b", i),
        "switch_name": re.compile(
            r"(?<![\w-])--[a-z][\w-]+|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+=\S+"),
        "switch_effect": re.compile(
            r"\b(?:disabl\w*|enabl\w*|turns? (?:on|off)|turning (?:on|off)|switch(?:es)? (?:on|off)|skip\w*|"
            r"suppress\w*|overrid\w*|opts? (?:in|out)|silenc\w*|forces?)\b", i),
        "root_cause": re.compile(
            r"^(?:the |our )?(?:key |real |actual |main |underlying |root )?"
            r"(?:fix|solution|cause|culprit|problem|issue|bug)"
            r" (?:was|is|turned out to be)\b(?! (?:now|still|fixed|resolved|gone|clear)\b)", i),
    }


def is_transient(sentence: str) -> bool:
    """True when the sentence reports, celebrates or describes the moment.

    Args:
        sentence: One cleaned candidate statement (any role).

    Returns:
        True to drop it. A completion report that also gives a reason or a rule
        ("... was moved to config/ so tests can find it") is kept.
    """
    p = _patterns()
    s = sentence.strip()
    if p["mark"].match(s) or p["cheer"].search(s) or p["closing_mark"].search(s):
        return True
    if p["verdict"].match(s) or p["identifier"].search(s):
        return True  # "Good, the default is 'all'.": a verdict on a check; a UUID names one run
    if re.search(r"[\u2500-\u257f]", s) or p["proposal"].match(s):
        return True  # a drawn directory tree or table; a proposal not yet taken
    if p["finding"].match(s) or p["moment"].search(s):
        return True
    return bool(p["report"].search(s)) and not p["reason"].search(s)


_FINDING_ITEM = re.compile(r"^(?:[A-Z0-9][\w'/&.+-]*)(?: [\w'/&.+-]+){0,6} [-\u2013\u2014] \S")


def is_finding_item(sentence: str) -> bool:
    """True for an assistant's list item "Title - description" ("No Testing Infrastructure
    - Zero tests despite ...", "Line Count Discrepancy - Documentation claims ..."): an
    entry of a review, an audit or a feature list, whose meaning hangs on the heading
    above it and which reports the state of the moment. Kept when it states a rule or
    a reason ("... - must be sourced because ...")."""
    s = sentence.strip()
    return bool(_FINDING_ITEM.match(s)) and not _patterns()["reason"].search(s) and not is_rule_label(s)


_NAMES_PLACE = re.compile(
    r"\b(?:folder|directory|subfolder|subdirectory|dir|file|repo|repository)\s+(?:called|named)\s+\S+",
    re.IGNORECASE)


_POINTER = re.compile(
    r"\b(?:this|these|those)\s+(?!(?:to|is|was|are|were|would|will|should|can|could|one|way|time|"
    r"means|session|repo|repository|project|codebase)\b)[a-z]+", re.IGNORECASE)


def points_back(sentence: str) -> bool:
    """True when the sentence's subject matter is a pointer to what was said before ("All
    content must conform to this standard.", "Keep those files in sync."; not "that",
    which is as often a relative pronoun). With no named thing of its own such a
    sentence cannot stand alone; the caller checks for named things."""
    return bool(_POINTER.search(re.sub(r"`[^`]*`", " ", sentence)))


def names_place(sentence: str) -> bool:
    """True when the person names where things are kept ("create a folder called
    transcripts/ and put each transcript in it", "keep it all in a folder called code"):
    the place outlives the request, so it is kept even inside one."""
    return bool(_NAMES_PLACE.search(sentence))




def is_task_request(sentence: str) -> bool:
    """True when the person's sentence asks for the task at hand, not a standing rule.

    Args:
        sentence: One cleaned sentence of the person's turn.

    Returns:
        True for "Commit and push it.", "Use the --no-verify flag." after a one-off
        request, "Only stage the files you changed."; False for "Always use the
        --no-verify flag when pushing." or "Use black with line length 100 in this repo.".
    """
    p = _patterns()
    s = sentence.strip()
    if _patterns()["check_request"].match(s) and not _patterns()["standing"].search(s):
        return True  # "Make sure all files are updated": "all" here is this task's files
    if p["general"].search(s) or teaches(s):
        return False
    return bool(p["pronoun_object"].search(s) or p["one_off"].match(s))


_TEACHING = re.compile(
    r"\b(?:with|using|via|to (?:run|build|test|start|stop|deploy|install|lint|format|release|publish|"
    r"migrate|serve|debug|reset|seed|generate|update)|so (?:that|it|the|broken|tests?|ci)|because|since)\b",
    re.IGNORECASE,
)


def teaches(sentence: str) -> bool:
    """True when the sentence says how a recurring task is done: it names a command or a
    flag and how or why to use it ("Run migrations with `alembic upgrade head`.", "Use
    `pytest -q` to run the tests."). Such an instruction is kept even inside a request."""
    s = sentence.strip()
    return bool(re.search(r"`[^`]+`|(?<!\w)--?[a-z][\w-]+", s)) and bool(_TEACHING.search(s))


def gives_reason(sentence: str) -> bool:
    """True when the sentence gives a reason or a rule ("because", "so that", "must", ...)."""
    return bool(_patterns()["reason"].search(sentence))


def is_general(sentence: str) -> bool:
    """True when the sentence carries a cue of a standing rule ("always", "from now on", ...)."""
    return bool(_patterns()["general"].search(sentence))


_SETUP = re.compile(
    r"^(?:(?:often|usually|sometimes|typically|normally),? )?(?:i|we)(?:'m|'re| am| are)? "
    r"(?:(?:currently|usually|often|always|normally) )?(?:running|using|on|working (?:on|in|with)|"
    r"developing (?:on|in|with)|run|use|have|work (?:on|in|with)|develop (?:on|in|with)|deploy (?:to|on)|"
    r"host (?:on|at))\b",
    re.IGNORECASE,
)


def is_setup(sentence: str) -> bool:
    """True for the person's statement of their setup ("I am running Claude Code on WSL",
    "often I have several sessions open in one folder"): a durable environment fact."""
    s = sentence.strip()
    return bool(_SETUP.match(s)) and not _patterns()["one_off"].match(s) and "?" not in s


_PREFERENCE = re.compile(
    r"^(?:i|we)(?:'d| would) (?:really )?(?:prefer|rather)\b|^(?:i|we)(?:'d| would) like (?!to\b)",
    re.IGNORECASE,
)


def is_preference(sentence: str) -> bool:
    """True for "I would prefer ...", "I'd like this to be ..." (a wish about how things are),
    not "I would like to create ..." (a request for the task at hand)."""
    return bool(_PREFERENCE.match(sentence.strip()))


#: Verbs a bullet opens with when its subject is the heading above it ("Contains user
#: messages", "Runs the script automatically"): the bullet cannot stand alone.
_OPENING_VERBS = frozenset(
    """
    contain run explain help provide show handle include support export detect analyze analyse
    convert extract use create add make keep allow let give take get generate display return read
    write store save print list find check track manage process parse format load call send build
    open close set update change enable disable remove delete prevent ensure preserve maintain
    demonstrate describe document cover offer need require become mean work start stop copy move
    output produce capture collect fetch watch monitor filter sort group render export import
    """.split()
)


def is_fragment(sentence: str) -> bool:
    """True for a bullet with no subject: it opens with a verb in the third person ("Runs the
    Python script automatically.", "ccusage - Analyzes token usage"), so it only means
    something under the heading the extractor no longer sees."""
    s = sentence.strip()
    head = re.split(r"\s+[-\u2013\u2014:]\s+", s, maxsplit=1)
    for part in (head[0], head[1] if len(head) > 1 else ""):
        m = re.match(r"([A-Za-z]+?)(?:es|s)\b", part)
        if m and part is head[0] and (m.group(1).lower() in _OPENING_VERBS or
                                      m.group(1).lower() + "e" in _OPENING_VERBS):
            return True
        if m and part is not head[0] and len(head[0].split()) <= 3 and (
                m.group(1).lower() in _OPENING_VERBS or m.group(1).lower() + "e" in _OPENING_VERBS):
            return True
    return False


_RULE_LABEL = re.compile(
    r"^(?:[A-Z][\w-]*\s+){0,3}?(?:prohibited|forbidden|banned|disallowed|approved|allowed|required|"
    r"mandatory|preferred|reserved|avoid|never|always|do not|don't|naming|rules?)(?:\s+[\w-]+){0,3}\s*:\s+\S",
    re.IGNORECASE,
)


_LABELLED_RULE = re.compile(
    r"^[A-Z][\w-]*(?:\s+[\w-]+){0,2}\s*:\s+.*\b(?:no [a-z]+|never|only|must|required|encouraged|"
    r"not allowed|forbidden|avoid|at most|at least)\b", re.IGNORECASE)


def is_rule_label(sentence: str) -> bool:
    """True for a summary line that states a rule as "label: values" ("Prohibited words:
    Strategic, Leading", "Avoid: 'Learn more', 'Get started'", "Naming: snake_case"), or
    whose values carry a rule word ("Headlines: 4-6 words, periods encouraged, no
    slogans")."""
    s = sentence.strip()
    return bool(_RULE_LABEL.match(s) or _LABELLED_RULE.match(s))


_LIMITATION = re.compile(
    r"\b(?:there(?:'s| is) no (?:direct |reliable |built-in |simple |easy |official )?way to|"
    r"(?:can ?not|can't|is not able to|isn't able to) (?:be )?(?:map|mapped|correlat\w+|tell|detect\w*|"
    r"know|identif\w+|distinguish\w*|determin\w+|access\w*|see)|"
    r"(?:could|can|may|might) (?:indeed |also )?(?:be|belong to|come) (?:from|to) (?:a |an )?(?:different|"
    r"other|another|wrong)|does(?:n't| not) (?:support|work with|allow|have a built-in)|"
    r"(?:restricts?|prevents?|blocks?|forbids?|keeps?) (?:\w+ ){0,3}from (?:making|running|changing|writing|"
    r"using|editing))\b",
    re.IGNORECASE,
)


def is_limitation(sentence: str) -> bool:
    """True for a limitation or a risk of the setup ("there's no direct way to correlate a
    process PID with its session ID", "the newest file could be from a different
    session"): the root cause a later session needs before it tries the same thing."""
    return bool(_LIMITATION.search(sentence)) and "?" not in sentence


_CONTEXT = re.compile(
    r"^(?:the|our|my|this) (?:[a-z-]+ ){1,3}(?:is|are) (?:a|an|the|for|in|on|at|built|written|used|meant)\b",
    re.IGNORECASE,
)


def is_context(sentence: str) -> bool:
    """True for the person's plain statement of context ("The audience is a hiring team",
    "Our API is a FastAPI app"): kept even without a named value, since a person's own
    description of the project is rarely chatter."""
    s = sentence.strip()
    return len(s.split()) >= 5 and bool(_CONTEXT.match(s)) and "?" not in s




def is_switch(sentence: str) -> bool:
    """True when the sentence names a command-line flag or an environment variable
    assignment with what it turns on or off ("Command line: `--no-copy-to-cwd` flag to
    disable", "Set `CLAUDE_EXPORT_COPY_TO_CWD=false` to skip the copy"): how a later
    session configures the tool. Questions are not switches."""
    s = sentence.strip()
    p = _patterns()
    return bool(p["switch_name"].search(s) and p["switch_effect"].search(s)) and "?" not in s




def is_root_cause(sentence: str) -> bool:
    """True for a sentence that states the cause of a problem or the fix as such ("The
    key fix was changing the default from 'md' to 'all'", "The problem is that the
    installed copy is older"): the root cause a later session needs. "The issue is now
    fixed" reports the moment and is not one."""
    return bool(_patterns()["root_cause"].match(sentence.strip())) and "?" not in sentence


#: A secret's value told in a clause, masked: a secret word, "is"/"was"/"are"/":" or
#: nothing, then the placeholder (:mod:`bli_memory.core.memory.redaction`). Only those
#: words go, so whose secret it is ("the staging DB", "user ci-bot", "on db-7:5432")
#: still counts as something said.
_MASKED_SECRET_CLAUSE = re.compile(
    r"(?i:\b(?:pass(?:word|phrase|code)s?|pw|pins?|tokens?|secrets?|(?:api[ _-]?)?keys?|"
    r"credentials?)(?:\s+(?:is|was|are|were)|\s*:)?\s+)\[REDACTED:[a-z_]+\]")
_WORD = re.compile(r"[A-Za-z0-9][\w'.:/@-]*")  # "user's" is one word
#: Words that carry nothing once the secret clauses are gone ("The user's ... and ...").
_FILLER = frozenset("a an the and or but also too per by of for to my our your their his her its "
                    "user user's users person person's".split())


def tells_a_masked_secret(statement: str) -> bool:
    """Whether ``statement`` says nothing but secrets' values, which masking replaced.

    Capture masks secrets before it keeps anything, so "My password is hunter2x and
    token ghp_..." would be kept as "The user's password is [REDACTED:prose_password]
    and token [REDACTED:github_token]": nothing a later session can use, and its secret
    words match searches about the account. True when, with every such clause taken out,
    fewer than two words that carry something are left; so "The user's password is
    [REDACTED:...] and the staging DB runs on db-7:5432" is kept, and a command with a
    placeholder in it (``API_TOKEN=[REDACTED:env_secret] make deploy``) is kept.
    """
    if "[REDACTED:" not in statement:
        return False
    rest = _MASKED_SECRET_CLAUSE.sub(" ", statement)
    if rest == statement:
        return False  # no clause tells a secret's value: a placeholder inside something else
    rest = rest.replace("[REDACTED:", " ")
    return sum(1 for w in _WORD.findall(rest) if w.lower() not in _FILLER) < 2
