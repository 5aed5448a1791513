"""Data that crosses a contract: memories, search hits, hook input and output.

Frozen dataclasses, standard library only, so host adapters and the hook entry
point can import them for free. Times are ISO 8601 strings in UTC
(``2026-11-30T04:57:01.123456Z``); similarities are cosine similarities in
[-1, 1] between L2-normalised embeddings. The container tag rule
(:func:`validate_tag`, docs/spaces.md) lives here too: settings, the stores and the
MCP tools all check tags, and it is a fact about the data, below every wing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AdjustedPlan",
    "Conflict",
    "Exchange",
    "ForgetResult",
    "HookEvent",
    "HookInput",
    "HookResult",
    "HostConfigPlan",
    "HostConventions",
    "HostStatus",
    "InstallOption",
    "Memory",
    "MemoryState",
    "Profile",
    "Recall",
    "RenderedOutput",
    "SaveResult",
    "SearchHit",
    "SearchResult",
    "UpdateResult",
    "validate_tag",
]

MemoryState = Literal["active", "superseded", "forgotten"]
HookEvent = Literal["session-start", "prompt", "stop"]


@dataclass(frozen=True)
class Memory:
    """One stored memory row (one version of it).

    Attributes:
        id: UUID4 string of this version.
        space: Container tag the row lives in.
        content: The remembered text.
        custom_id: Caller's upsert key, unique among live rows of a space, or None.
        metadata: Caller's JSON object.
        source: Who wrote it: ``mcp``, ``hook``, ``extract``, ``import``, ...
        session_id: The host session it came from, when known.
        created_at: When this version was written (UTC ISO 8601).
        updated_at: Last change of the row's state (UTC ISO 8601).
        version: 1 for the first version, +1 per update.
        supersedes: Id of the version this one replaced, or None.
        state: ``active``, ``superseded`` or ``forgotten``.
        forgotten_at: When it was tombstoned, or None.
        expires_at: After this time the memory leaves search, or None.
    """

    id: str
    space: str
    content: str
    custom_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = "mcp"
    session_id: str | None = None
    created_at: str = ""
    updated_at: str = ""
    version: int = 1
    supersedes: str | None = None
    state: MemoryState = "active"
    forgotten_at: str | None = None
    expires_at: str | None = None


@dataclass(frozen=True)
class Conflict:
    """Two live memories on one subject in one result.

    Attributes:
        newer: Id of the later-saved memory (ranked first).
        older: Id of the earlier one.
        similarity: Cosine similarity of their embeddings (:mod:`bli_memory.core.memory.conflicts`).
    """

    newer: str
    older: str
    similarity: float


@dataclass(frozen=True)
class SearchHit:
    """One search result.

    Attributes:
        memory: The live memory found.
        similarity: Cosine similarity of query and memory embeddings, or None when the
            vector channel did not score it. Never a fused score.
        score: The fused ranking score (reciprocal-rank fusion plus recency prior); only
            meaningful for ordering within one result.
        channels: Which retrievers found it: ``vector``, ``keyword_all`` (every query
            term matched), ``keyword_any``, ``context`` (next to a strong keyword hit in
            the same session).
    """

    memory: Memory
    similarity: float | None
    score: float
    channels: tuple[str, ...] = ()

    @property
    def exact_keyword(self) -> bool:
        """True when every term of the query matched lexically (identifier hits)."""
        return "keyword_all" in self.channels


@dataclass(frozen=True)
class Profile:
    """What session-start shows: durable facts about the person/project, and recent activity.

    Attributes:
        space: The canonical container tag.
        facts: Durable preferences, conventions and decisions, newest first.
        recent: The latest memories of the space, newest first.
    """

    space: str
    facts: tuple[Memory, ...] = ()
    recent: tuple[Memory, ...] = ()


@dataclass(frozen=True)
class SearchResult:
    """Answer of a search; zero hits is a normal answer.

    Attributes:
        query: The query as given.
        space: Canonical container tag searched.
        spaces: Every tag that names the space (the canonical one and its aliases).
        hits: Best first.
        profile: Filled when the caller asked for the profile.
        conflicts: Pairs of hits that are near-duplicates on one subject (the newer
            ranks first; :mod:`bli_memory.core.memory.conflicts`).
    """

    query: str
    space: str
    spaces: tuple[str, ...]
    hits: tuple[SearchHit, ...] = ()
    profile: Profile | None = None
    conflicts: tuple[Conflict, ...] = ()


@dataclass(frozen=True)
class Recall:
    """A prompt's search and what the injection gate weighs it with, answered in one call
    (:meth:`~bli_memory.core.memory.backend.MemoryBackend.recall`; one HTTP request on the
    team service).

    Attributes:
        result: The search.
        term_counts: ``((term, live memories holding it), ...)`` for the query's content
            terms, in query order (:mod:`bli_memory.core.memory.term_evidence`); empty when
            the search has no hit (the gate then has nothing to weigh).
        live: Live memories of the space (0 when the search has no hit).
        background: Mean cosine similarity between two live memories of the space, -1.0..1.0
            (:data:`~bli_memory.core.memory.relevance.DIVERSE_BACKGROUND`); None when the
            space is small, unmeasured, or the search has no hit.
    """

    result: SearchResult
    term_counts: tuple[tuple[str, int], ...] = ()
    live: int = 0
    background: float | None = None


@dataclass(frozen=True)
class SaveResult:
    """Answer of a save.

    Attributes:
        memory: The live row that now holds the content.
        space: Where the row actually went (may differ from the tag asked for, when that
            tag is an alias of another space).
        status: ``created``; ``duplicate`` (identical live content already there: nothing
            written); ``updated`` (customId upsert replaced a previous version); ``queued``
            (extract mode: a job was queued, nothing saved yet).
        previous: The version a customId upsert replaced.
        job_id: Id of the queued extract job, for ``queued``.
        masked: Secrets the store replaced by ``[REDACTED:<kind>]`` before writing, in
            the content, the metadata, the ``sessionId`` and the ``source``
            (:mod:`bli_memory.core.memory.stored_secrets`); a caller that masked the
            content first (the MCP tools, the service's doors) adds its own count.
    """

    memory: Memory | None
    space: str
    status: Literal["created", "duplicate", "updated", "queued"]
    previous: Memory | None = None
    job_id: str | None = None
    masked: int = 0


@dataclass(frozen=True)
class UpdateResult:
    """Answer of an update: the new live version and the one it superseded.

    ``status`` is ``updated``, or ``unchanged`` when the content was already the same.
    ``named`` is the older version whose id was given, when the id named one: an id
    names a memory across its versions, so the update replaced the live head
    (``previous``), not that version. ``masked`` counts the secrets the store replaced by
    ``[REDACTED:<kind>]`` in the new content and in the ``sessionId`` and ``source`` it
    carries over, as :attr:`SaveResult.masked` does for a save; a caller that masked the
    content first (the MCP tools, the service's doors) adds its own count.
    """

    memory: Memory
    previous: Memory
    status: Literal["updated", "unchanged"] = "updated"
    named: Memory | None = None
    masked: int = 0


@dataclass(frozen=True)
class ForgetResult:
    """Answer of a forget.

    Attributes:
        memory: The version that was tombstoned.
        matched_by: ``id``, ``content`` (exact text) or ``query`` (closest match).
        similarity: For ``query``: the cosine similarity of the match (>= 0.85).
        named: For ``id``: the older version whose id was given, when the id named one
            (the live head, ``memory``, was tombstoned); None when it named the head.
    """

    memory: Memory
    matched_by: Literal["id", "content", "query"]
    similarity: float | None = None
    named: Memory | None = None


# --- hooks ------------------------------------------------------------------------


@dataclass(frozen=True)
class HookInput:
    """A host's hook payload, normalised by its adapter.

    Attributes:
        host: Adapter name (``claude``, ``codex``, ...).
        event: Our event name: ``session-start``, ``prompt`` or ``stop``.
        session_id: The host's session id, when sent; one over 512 characters becomes
            ``sha256:<hex>`` of it.
        cwd: Working folder of the session (decides the space).
        prompt: The person's prompt text (prompt event; for hosts that echo it, stop too),
            with any context we injected earlier already stripped.
        transcript_path: Path of the host's transcript file, when it has one.
        reentrant: True for a stop that the host re-fired after a hook blocked
            (Claude's ``stop_hook_active``); such a stop saves nothing.
        last_assistant_message: The reply the host put in the payload, when it did.
        source: Session-start source (``startup``, ``resume``, ``clear``, ``compact``).
        raw: The payload as received, for adapter-specific readers.
    """

    host: str
    event: HookEvent
    session_id: str | None = None
    cwd: str | None = None
    prompt: str | None = None
    transcript_path: str | None = None
    reentrant: bool = False
    last_assistant_message: str | None = None
    source: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A session id longer than a store keeps (records.MAX_KEY_CHARS, 512) would make
        # every write of the turn refuse it and lose the turn: keep a digest instead, the
        # same for the same id, so the session still groups its captures.
        if isinstance(self.session_id, str) and len(self.session_id) > 512:
            import hashlib

            digest = hashlib.sha256(self.session_id.encode("utf-8", "surrogatepass")).hexdigest()
            object.__setattr__(self, "session_id", f"sha256:{digest}")


@dataclass(frozen=True)
class Exchange:
    """The last user/assistant exchange of a session, as plain text."""

    user: str
    assistant: str


@dataclass(frozen=True)
class HookResult:
    """What a hook decided, before a host adapter renders it.

    Attributes:
        event: Our event name.
        outcome: ``ok``, ``skipped`` or ``failed``.
        block: The context block to inject (``<bli-memory-recall>...``), or None.
        reason: Closed-set reason for ``skipped``/``failed``.
        fields: Extra receipt fields (``hits``, ``chars``, ``masked``, ``queued``, ...).
        injected: Ids of the memories in ``block``, held for the session until the block
            is written (:mod:`bli_memory.core.hooks.injection_log`).
    """

    event: HookEvent
    outcome: Literal["ok", "skipped", "failed"]
    block: str | None = None
    reason: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    injected: tuple[str, ...] = ()


@dataclass(frozen=True)
class RenderedOutput:
    """A hook result in the host's own format: what to write to stdout, and the exit code."""

    stdout: str = ""
    exit_code: int = 0


# --- installer --------------------------------------------------------------------


@dataclass(frozen=True)
class HostConfigPlan:
    """Config edits one host needs: the new text of each file it touches.

    Attributes:
        host: Adapter name.
        files: Map of absolute path -> (old text or None when absent, new text or None
            to delete). Only files whose text changes are listed.
        notes: One-line remarks for the person (trust, extras needed, ...).
        owned: Paths among ``files`` whose whole content is ours (a plugin's source):
            a dry run summarises them instead of printing every line.
    """

    host: str
    files: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    owned: tuple[str, ...] = ()


@dataclass(frozen=True)
class InstallOption:
    """An extra ``install`` flag a host plugin offers (hook spec ``host_install_options``).

    The installer adds the flag to ``install``'s parser and hands its value to the plugin's
    ``host_adjust_plan``; it never names a host itself (docs/plugin-hooks.md).

    Attributes:
        host: The adapter name the flag is for (``gemini``).
        flag: The option, e.g. ``--trust-folder``; also its key in ``host_adjust_plan``'s
            ``options``.
        help: The text ``install --help`` shows for it.
        misuse: The error (a ``ConfigError``) when the flag is given but ``host`` is not
            among the hosts being installed.
        metavar: The value's name in the help (``PATH``); None makes the flag a switch,
            ``True`` when given.
    """

    host: str
    flag: str
    help: str
    misuse: str
    metavar: str | None = None


@dataclass(frozen=True)
class AdjustedPlan:
    """A host's plan with its optional edits (hook spec ``host_adjust_plan``).

    Attributes:
        plan: The plan to apply instead of the one given.
        after_apply: Called once after the plans were written (never on a dry run or
            when writing failed), e.g. to record what the edits added so uninstall can
            remove exactly that.
    """

    plan: HostConfigPlan
    after_apply: Callable[[], None] | None = None


@dataclass(frozen=True)
class HostStatus:
    """What is installed for one host.

    ``state`` is ``installed``, ``outdated`` (paths or timeouts differ from the
    contract), ``absent`` (nothing of ours) or ``not_found`` (host not on this machine).
    ``server`` is our MCP server's entry as the host's config writes it (``command``,
    ``args``, ``env`` and the host's own keys), or None when it has none: ``status
    --check`` starts exactly that (:mod:`bli_memory.installers.check`).
    """

    host: str
    state: Literal["installed", "outdated", "absent", "not_found"]
    details: tuple[str, ...] = ()
    server: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------
# Host conventions (the ``host_conventions`` hook)
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostConventions:
    """How one host names itself and marks the text it adds (a host plugin's answer).

    Attributes:
        host: The adapter name (``gemini``).
        agent: The name the experience log records for this host (``gemini-cli``).
        env_markers: Variables the host sets for the commands it runs, in the order
            they are checked (docs/hosts.md); any one non-empty names this host.
        client_names: Lower-case substrings of the MCP ``clientInfo.name`` this host
            sends in ``initialize`` (``gemini`` in ``gemini-cli-mcp-client``).
        context_wrappers: Tag names the host wraps around the context a hook injects
            (Gemini CLI: ``hook_context``); such blocks are stripped from captured text
            and neutralised inside injected memories, as our own blocks are.
        experience_dir: Folder under the home folder that holds the shared
            ``AGENT-EXPERIENCE.md`` log and its outbox, when this host's plugin owns
            that location (the Codex plugin: ``.codex``); None for the others.
        receipts_in_log: The host shows a successful hook's stderr to the person, so
            hook receipts go to the receipt log file instead of stderr
            (:mod:`bli_memory.core.hooks.receipt_log`; Gemini CLI sets it).
    """

    host: str
    agent: str
    env_markers: tuple[str, ...] = ()
    client_names: tuple[str, ...] = ()
    context_wrappers: tuple[str, ...] = ()
    experience_dir: str | None = None
    receipts_in_log: bool = False


_TAG_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def validate_tag(tag: str) -> str:
    """Validate a container tag and return it stripped.

    A valid tag is 1 to 128 characters from ``[A-Za-z0-9_.:-]`` after
    stripping surrounding whitespace. Used for ``BLI_MEMORY_CONTAINER_TAG`` and
    for the ``containerTag`` argument of the MCP tools.

    Args:
        tag: The candidate tag.

    Returns:
        The stripped tag.

    Raises:
        ValueError: If ``tag`` is not a string or is not a valid tag.
    """
    if not isinstance(tag, str):
        raise ValueError(f"container tag must be a string, got {type(tag).__name__}")
    stripped = tag.strip()
    if not _TAG_RE.fullmatch(stripped):
        raise ValueError(f"invalid container tag: must be 1-128 characters from [A-Za-z0-9_.:-]; "
                         f"{_what_is_wrong(stripped)} (the value is not repeated: it may be a secret)")
    return stripped


def _what_is_wrong(tag: str) -> str:
    """Why ``tag`` is no container tag, without repeating it: its first character outside
    the allowed set and where (1-based), or its length; a space, quote or ``=`` says
    little of a value, so a secret pasted as a tag stays out of the message."""
    for i, ch in enumerate(tag, 1):
        if not _TAG_RE.fullmatch(ch):
            return f"character {i} is {ch!r}"
    return f"it has {len(tag)} characters"
