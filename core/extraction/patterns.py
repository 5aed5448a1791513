"""The default extractor's compiled rules: one regular expression per cue.

:func:`rules` compiles them once, on first use, so importing the extractor stays cheap
for the hook. :mod:`bli_memory.core.extraction.sentences` splits text with them and
:mod:`bli_memory.core.extraction.classify` gives a sentence its kind with them. Each
cue's source is beside it.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["Rules", "rules"]


class Rules:
    """The compiled rules, one attribute per cue.

    A plain class: a 30-field dataclass costs a millisecond to import.
    """

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
def rules() -> Rules:
    """Compile the rules once, on first use (import stays cheap for the hook)."""
    i = re.IGNORECASE
    return Rules(
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

