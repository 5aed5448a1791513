"""The request and response shapes of the service's doors, declared once as pydantic models.

The doors parse every body with its request model (:func:`~bli_memory.core.team.service.door.door`:
strict types, so ``"10"`` is not a number and ``1`` not a boolean; unknown keys are ignored)
and render every answer with its answer model; the OpenAPI document
(:mod:`~bli_memory.core.team.service.openapi`) is generated from the same models. A memory,
a profile and a search are the one wire shape of :mod:`bli_memory.core.memory.wire`. Field
names are the wire names (``containerTag``, ``customId``, ...). Answer models forbid
undeclared keys, so a test that validates a real answer against its model fails when a
door grows a key the document does not declare.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from bli_memory.core.memory.wire import HitRecord, MemoryRecord, ProfileRecord, RecallRecord, SearchRecord
from bli_memory.core.memory.wire import TermCount as WireTermCount
from bli_memory.core.team.service.door import MAX_IMPORT_RECORDS

__all__ = [
    "EXPERIENCE_STORES",
    "EXPERIENCE_VERDICTS",
    "Audit",
    "AuditAfter",
    "AuditRequest",
    "BackgroundAnswer",
    "ClearRecordingsAnswer",
    "Erased",
    "Error",
    "ErrorBody",
    "ExperienceAnswer",
    "ExperienceRequest",
    "ExportAnswer",
    "ExportRecord",
    "ExportRequest",
    "ForgetAnswer",
    "ForgetRequest",
    "GetAnswer",
    "GetRequest",
    "Health",
    "HistoryAnswer",
    "IdRequest",
    "ImportAnswer",
    "ImportRequest",
    "InfoAnswer",
    "ListAnswer",
    "Memory",
    "Profile",
    "Readiness",
    "RecallAnswer",
    "RecallRequest",
    "RecordAnswer",
    "RecordRequest",
    "Recording",
    "RecordingsAnswer",
    "SaveAnswer",
    "SaveRequest",
    "SearchAnswer",
    "SearchHit",
    "SearchRequest",
    "SpaceLimitRequest",
    "SpaceRequest",
    "TermCount",
    "TermsAnswer",
    "TermsRequest",
    "UpdateAnswer",
    "UpdateRequest",
    "WhoAmI",
]

#: The stores and verdicts an experience opinion may name (BLI Memory spec, "Live A/B").
EXPERIENCE_STORES = ("bli", "supermemory", "both")
EXPERIENCE_VERDICTS = ("win", "loss", "noise")


def _tag(value: str) -> str:
    from bli_memory.core.models import validate_tag

    return validate_tag(value)  # its ValueError names what is wrong, never the value


Tag = Annotated[str, AfterValidator(_tag), Field(description="Container tag of the space.",
                                                 json_schema_extra={"pattern": r"^[A-Za-z0-9_.:-]{1,128}$"})]
Limit = Annotated[int, Field(ge=1, le=100)]


class _Request(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- shared shapes ---------------------------------------------------------------------


#: The one wire shape of a memory and of a profile (:mod:`bli_memory.core.memory.wire`).
Memory = MemoryRecord
Profile = ProfileRecord


class ErrorBody(_Answer):
    """A closed-set reason and a message that never echoes a memory, a prompt or a token."""

    reason: str
    message: str


class Error(_Answer):
    """Every refusal: ``{"error": {"reason", "message"}}``."""

    error: ErrorBody


# --- requests -------------------------------------------------------------------------


class SpaceRequest(_Request):
    """A door that names only a space."""

    containerTag: Tag


class SpaceLimitRequest(SpaceRequest):
    """A space and how many rows to answer."""

    limit: Limit | None = None


class IdRequest(_Request):
    """A door that names one memory (any version's id)."""

    id: str


class _Query(SpaceRequest):
    q: str | None = None
    query: str | None = Field(None, description="Accepted for `q`.")

    @property
    def text(self) -> str:
        """``q``, else ``query``, else ""."""
        return self.q if self.q is not None else (self.query or "")


class SearchRequest(_Query):
    """A hybrid search (``query`` is accepted for ``q``)."""

    limit: Limit = 10
    includeProfile: bool = False


class SaveRequest(SpaceRequest):
    """Content to remember; ``customId`` upserts; ``extract`` queues a distillation job."""

    content: str
    customId: str | None = None
    metadata: dict[str, Any] | None = None
    source: str | None = None
    sessionId: str | None = None
    expiresAt: str | None = None
    extract: bool = False
    jobId: str | None = Field(None, json_schema_extra={"format": "uuid"},
                              description="Extract mode: the client's job id; a retry is queued once.")


class UpdateRequest(SpaceRequest):
    """New content for the memory named by ``id`` or ``customId``."""

    content: str
    id: str | None = None
    customId: str | None = None
    source: str | None = None


class ForgetRequest(SpaceRequest):
    """Forget by ``id``, exact ``content`` or the closest match to ``query``."""

    id: str | None = None
    content: str | None = None
    query: str | None = None


class RecallRequest(_Query):
    """A prompt to recall for: its search and the gate's inputs in one request."""

    limit: Limit = 10


class TermsRequest(_Query):
    """The prompt whose content terms are counted."""


class GetRequest(IdRequest):
    """One memory; ``includeInactive`` reads superseded and forgotten versions."""

    includeInactive: bool = False


class AuditRequest(_Request):
    """``repair`` rebuilds what the audit finds broken."""

    repair: bool = False


class ExportRequest(_Request):
    """One page of the caller's own rows (every space when ``containerTag`` is absent)."""

    containerTag: Tag | None = None
    after: str = Field("0", description="`next` of the previous page (digits).")
    limit: Annotated[int, Field(ge=1, le=1000)] | None = None


class ExportRecord(Memory):
    """An exported row: a memory with its vector."""

    embedding: str | None = Field(description="base64 of little-endian float32")
    embeddingModel: str | None


class ImportRequest(_Request):
    """Exported rows to import as the caller's, all or nothing."""

    records: Annotated[list[dict[str, Any]], Field(max_length=MAX_IMPORT_RECORDS,
                                                   description="Rows of an export (ExportRecord).")]
    dryRun: bool = False
    offset: Annotated[int, Field(ge=0, le=10**9)] = 0
    chainIds: Annotated[list[str], Field(max_length=MAX_IMPORT_RECORDS)] | None = Field(
        None, description="Ids of records of the same import sent in other parts, which records "
                          "here may supersede.")


class RecordRequest(SpaceRequest):
    """One recorded turn (capture-only: never searched, exported or injected)."""

    text: str
    source: str | None = None
    sessionId: str | None = None
    id: str | None = Field(None, json_schema_extra={"format": "uuid"},
                           description="The caller's id for the recording: kept once, so a retry "
                                       "never records the turn twice.")


class ExperienceRequest(_Request):
    """One agent-experience opinion; a retry under the same id is idempotent."""

    id: str | None = Field(None, json_schema_extra={"format": "uuid"})
    store: Literal[EXPERIENCE_STORES]  # type: ignore[valid-type]
    verdict: Literal[EXPERIENCE_VERDICTS]  # type: ignore[valid-type]
    reason: str = Field(description="One line, at most 500 characters.")
    created_at: str | None = None
    createdAt: str | None = Field(None, description="Accepted for `created_at`.")


# --- answers --------------------------------------------------------------------------


#: One hit of a search answer.
SearchHit = HitRecord


class SearchAnswer(SearchRecord):
    """Hits, best first; zero hits is a normal answer."""

    model_config = ConfigDict(extra="forbid")


class SaveAnswer(_Answer):
    """What a save did (``queued``: an extract job, ``memory`` null)."""

    status: Literal["created", "duplicate", "updated", "queued"]
    containerTag: str
    memory: Memory | None
    previous: Memory | None
    jobId: str | None
    masked: int


class UpdateAnswer(_Answer):
    """The new version and the one it replaced; ``named`` is the older version ``id`` named."""

    status: Literal["updated", "unchanged"]
    memory: Memory
    previous: Memory
    named: Memory | None
    masked: int


class ForgetAnswer(_Answer):
    """The tombstoned (live) version; ``named`` is the older version ``id`` named."""

    matchedBy: Literal["id", "content", "query"]
    similarity: float | None
    memory: Memory
    named: Memory | None


class HistoryAnswer(_Answer):
    """Every version, newest first."""

    versions: list[Memory]


class Erased(_Answer):
    """Rows erased."""

    erased: int


class InfoAnswer(_Answer):
    """What the caller sees of the space."""

    space: str
    aliases: list[str]
    counts: dict[str, int]
    recordings: int
    store: dict[str, Any]
    embeddingModel: str
    extractJobs: dict[str, int]


#: In how many live memories of the space one term occurs.
TermCount = WireTermCount


class TermsAnswer(_Answer):
    """Document frequency per term, and the live memories of the space."""

    terms: list[TermCount]
    live: int


class RecallAnswer(RecallRecord):
    """The search, and what the prompt hook's gate weighs it with (empty terms, ``live`` 0
    and null background when nothing was found)."""

    model_config = ConfigDict(extra="forbid")


class BackgroundAnswer(_Answer):
    """Mean cosine between two live memories of the space (null below 100 memories)."""

    background: float | None


class ListAnswer(_Answer):
    """Newest live memories first."""

    containerTag: str
    memories: list[Memory]


class GetAnswer(_Answer):
    """The memory and its other versions."""

    memory: Memory
    history: list[Memory]


class AuditAfter(_Answer):
    """The audit run again after a repair."""

    ok: bool
    missing_keyword: int
    stale_keyword: int
    missing_vector: int
    wrong_model: int


class Audit(AuditAfter):
    """The audit report (and the report after a repair)."""

    counts: dict[str, int]
    repaired: bool
    after: AuditAfter | None = None


class ExportAnswer(_Answer):
    """One page; ``next`` is null on the last."""

    records: list[ExportRecord]
    next: str | None


class ImportAnswer(_Answer):
    """What was (or would be) imported."""

    imported: int
    skipped: int = Field(description="Records already present (their ids are yours already).")
    forgotten: int = Field(0, description="Live records left out because they restate a memory forgotten "
                                          "or purged in their space, with the older versions they replaced.")
    masked: int = Field(0, description="Secrets masked in the imported records, as a save masks them.")
    dryRun: bool


class RecordAnswer(_Answer):
    """Recorded; ``info`` counts it under ``recordings``."""

    id: str
    containerTag: str


class Recording(_Answer):
    """One recorded turn."""

    id: str
    space: str
    sessionId: str | None
    source: str
    createdAt: str | None
    text: str


class RecordingsAnswer(_Answer):
    """The caller's recorded turns, newest first."""

    recordings: list[Recording]
    count: int


class ClearRecordingsAnswer(_Answer):
    """How many recorded turns were erased."""

    cleared: int


class ExperienceAnswer(_Answer):
    """The stored opinion and whether this request inserted it."""

    id: str
    store: Literal[EXPERIENCE_STORES]  # type: ignore[valid-type]
    verdict: Literal[EXPERIENCE_VERDICTS]  # type: ignore[valid-type]
    reason: str
    createdAt: str | None
    status: Literal["created", "identical"]


class WhoAmI(_Answer):
    """The person and device a token proves."""

    person: str
    device: str
    deviceId: str


class Health(_Answer):
    """Liveness."""

    status: Literal["ok"]


class Readiness(_Answer):
    """Readiness: the database (and its schema) and the embedding model."""

    status: Literal["ready", "not_ready"]
    database: bool
    model: bool
