"""The request and answer shapes of the service's documents doors (``/api/documents/...``).

Kept beside :mod:`~bli_memory.core.team.service.models` (the memory doors' shapes), on the same
bases: requests are strict (``"10"`` is not a number) and ignore unknown keys, answers forbid
undeclared keys, and the OpenAPI document is generated from them. A match and an index's
state are the one wire shape of :mod:`bli_memory.core.memory.document_wire`.

Every list and text is bounded, so one request costs the service a bounded amount of work:
a manifest part names at most :data:`MAX_MANIFEST_FILES` files (or commit ids), an upload part carries at
most :data:`MAX_UPLOAD_CHUNKS` chunks and :data:`MAX_UPLOAD_COMMITS` commit messages (the
service embeds them while the client waits), and both bodies are at most
:data:`MAX_DOCUMENTS_BODY_BYTES`. The client (:mod:`bli_memory.core.team.client.documents`)
cuts a run into parts well inside these bounds.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from bli_memory.core.documents.sources import SKIP_REASONS
from bli_memory.core.memory.document_wire import DocumentHitRecord, DocumentsStateRecord
from bli_memory.core.team.service.models import SpaceRequest

__all__ = [
    "MAX_DOCUMENTS_BODY_BYTES",
    "MAX_GLOBS",
    "MAX_MANIFEST_FILES",
    "MAX_PATH_CHARS",
    "MAX_SKIPPED",
    "MAX_TEXT_CHARS",
    "MAX_UPLOAD_CHUNKS",
    "MAX_UPLOAD_COMMITS",
    "ChunkIn",
    "CommitIn",
    "DocumentForgetAnswer",
    "DocumentForgetRequest",
    "DocumentSearchAnswer",
    "DocumentSearchRequest",
    "DocumentStatusAnswer",
    "FileIn",
    "ManifestAnswer",
    "ManifestFile",
    "ManifestRequest",
    "RunStateIn",
    "SkippedIn",
    "UploadAnswer",
    "UploadRequest",
]

#: Largest body of the manifest and upload doors.
MAX_DOCUMENTS_BODY_BYTES = 4 * 1024 * 1024
#: Most files one manifest part names.
MAX_MANIFEST_FILES = 2000
#: Most document chunks in one upload part (all its files together).
MAX_UPLOAD_CHUNKS = 256
#: Most commit messages in one upload part.
MAX_UPLOAD_COMMITS = 256
#: Longest path, in characters.
MAX_PATH_CHARS = 1024
#: Longest chunk or commit message, in characters (a chunk is at most 1,600 characters;
#: masking may lengthen it; a longer commit message is cut by the client).
MAX_TEXT_CHARS = 8000
#: Most files left out that a run records (the first, in path order).
MAX_SKIPPED = 5000
#: Why a client may say a file was left out (:data:`~bli_memory.core.documents.sources.SKIP_REASONS`
#: and ``forgotten``): a reason is shown to every reader, so it is never free text.
SKIP_REASONS_SENT = (*SKIP_REASONS, "forgotten")
#: Most include (and exclude) globs a run records.
MAX_GLOBS = 64

def _plain_path(path: str) -> str:
    """A repository path as git lists it: relative, no ``.``/``..`` or empty name, no control
    character (a path is shown in answers, links and a terminal)."""
    names = path.split("/")
    if any(n in ("", ".", "..") for n in names) or any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        raise ValueError("a path must be relative to the repository's top folder, with no '.', '..' "
                         "or empty name and no control character")
    return path


DocPath = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS,
                               description="A path relative to the repository root, with `/`."),
                    AfterValidator(_plain_path)]
#: What a forget or a glob is: a path-like pattern, checked where it is used.
Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the file's bytes, hex.")]
CommitSha = Annotated[str, Field(pattern=r"^[0-9a-f]{40,64}$", description="A commit's full id.")]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Line = Annotated[int, Field(ge=1, le=10**8)]
Globs = Annotated[list[Pattern], Field(max_length=MAX_GLOBS)]


class _Request(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --- requests -------------------------------------------------------------------------


class DocumentSearchRequest(SpaceRequest):
    """A search of the space's documents and commit messages (``query`` is accepted for ``q``)."""

    q: str | None = None
    query: str | None = Field(None, description="Accepted for `q`.")
    limit: Annotated[int, Field(ge=1, le=50)] = 5
    kinds: Annotated[list[Literal["document", "commit"]], Field(max_length=2)] | None = Field(
        None, description="What to search: documents, commit messages, or both (the default).")

    @property
    def text(self) -> str:
        """``q``, else ``query``, else ""."""
        return self.q if self.q is not None else (self.query or "")


class ManifestFile(_Request):
    """One document of a client's manifest: its path and the SHA-256 of its bytes."""

    path: DocPath
    sha256: Sha256


class ManifestRequest(SpaceRequest):
    """One part of a client's manifest: the paths from ``after`` (exclusive; null: the first)
    through ``through`` (inclusive; null: the last) in code-point order, each with its SHA-256.
    Or, with ``commits``, one part of a history (after a rewrite): the commit ids from
    ``after`` through ``through`` in id order, compared with the commit messages the index
    holds (``files`` is then left out)."""

    files: Annotated[list[ManifestFile], Field(max_length=MAX_MANIFEST_FILES)] = Field(default_factory=list)
    commits: Annotated[list[CommitSha], Field(max_length=MAX_MANIFEST_FILES)] | None = Field(
        None, description="Commit ids of the history, to compare with the index's commit messages.")
    after: DocPath | None = None
    through: DocPath | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ManifestRequest:
        if self.commits is not None and self.files:
            raise ValueError("a manifest part lists files or commits, not both")
        return self


class ChunkIn(_Request):
    """One chunk of a document: its heading trail, its lines and its text."""

    heading: Annotated[list[Annotated[str, Field(max_length=1000)]], Field(max_length=32)] = Field(
        default_factory=list)
    startLine: Line
    endLine: Line
    text: Text

    @model_validator(mode="after")
    def _lines(self) -> ChunkIn:
        if self.endLine < self.startLine:
            raise ValueError("a chunk's endLine comes before its startLine")
        return self


class FileIn(_Request):
    """Chunks ``offset`` to ``offset + len(chunks) - 1`` of ``total`` of one version of a file; the
    part that reaches ``total`` completes it."""

    path: DocPath
    sha256: Sha256
    size: Annotated[int, Field(ge=0, le=10**10)]
    offset: Annotated[int, Field(ge=0, le=10**6)] = 0
    total: Annotated[int, Field(ge=0, le=10**6)]
    chunks: Annotated[list[ChunkIn], Field(max_length=MAX_UPLOAD_CHUNKS)]

    @model_validator(mode="after")
    def _fits(self) -> FileIn:
        if self.offset + len(self.chunks) > self.total:
            raise ValueError("a file part holds chunks past its total")
        return self


class CommitIn(_Request):
    """One commit message, its secrets masked by the client."""

    sha: CommitSha
    date: Annotated[str, Field(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:\d\d)$",
                               description="The committer date, ISO 8601 with its offset.")]
    text: Text


class SkippedIn(_Request):
    """A file left out of the index, and why."""

    path: Pattern
    reason: Literal[SKIP_REASONS_SENT]  # type: ignore[valid-type]


class RunStateIn(_Request):
    """What a finished run records."""

    root: Annotated[str, Field(max_length=4096)] | None = None
    skipped: Annotated[list[SkippedIn], Field(max_length=MAX_SKIPPED)] = Field(default_factory=list)
    web: Annotated[str, Field(max_length=2048, pattern=r"^https://[^\s]+$")] | None = None
    revision: CommitSha | None = None
    lastCommit: CommitSha | None = Field(None, description="The newest commit read (null: none).")
    include: Globs = Field(default_factory=list, description="The run's include globs (empty: the defaults).")
    exclude: Globs = Field(default_factory=list)


class UploadRequest(SpaceRequest):
    """One part of a client's run: file parts, paths to remove, new commit messages, commit
    messages to drop (no longer in the history), and (the last part) the run's state."""

    files: Annotated[list[FileIn], Field(max_length=MAX_UPLOAD_CHUNKS)] = Field(default_factory=list)
    removed: Annotated[list[DocPath], Field(max_length=MAX_MANIFEST_FILES)] = Field(default_factory=list)
    commits: Annotated[list[CommitIn], Field(max_length=MAX_UPLOAD_COMMITS)] = Field(default_factory=list)
    removedCommits: Annotated[list[CommitSha], Field(max_length=MAX_MANIFEST_FILES)] = Field(
        default_factory=list, description="Commit ids the history no longer has (after a rewrite).")
    lastCommit: CommitSha | None = Field(None, description="The newest commit read so far.")
    finished: RunStateIn | None = Field(None, description="The run's state (its last part).")

    @model_validator(mode="after")
    def _bounded(self) -> UploadRequest:
        if sum(len(f.chunks) for f in self.files) > MAX_UPLOAD_CHUNKS:
            raise ValueError(f"an upload part holds at most {MAX_UPLOAD_CHUNKS} chunks")
        return self


class DocumentForgetRequest(SpaceRequest):
    """A path to keep out of the index from now on, as a ``.gitignore`` line reads (a file, a
    folder, a glob), relative to the repository's top folder; or, with ``undo``, to let back in."""

    path: Pattern
    undo: bool = Field(False, description="Let the path back in (the next run uploads it).")


# --- answers --------------------------------------------------------------------------


class DocumentSearchAnswer(_Answer):
    """Matches, best first; none is a normal answer."""

    containerTag: str
    results: list[DocumentHitRecord]


class DocumentStatusAnswer(_Answer):
    """The index the caller uses for the space: what it holds (null: none yet), whose it is,
    whether the caller may change it, where the next run starts and the forgotten paths."""

    containerTag: str
    state: DocumentsStateRecord | None
    owner: str
    writable: bool
    lastCommit: str | None
    forgotten: list[str]


class ManifestAnswer(_Answer):
    """Paths of the part the index lacks or holds another version of (upload them), and paths
    it holds in the part's range that the part does not name (remove them)."""

    stale: list[str]
    extra: list[str]


class UploadAnswer(_Answer):
    """What the part wrote."""

    files: int = Field(description="Files completed.")
    chunks: int = Field(description="Document chunks written.")
    embedded: int = Field(description="Texts the service's model embedded (the others kept their vectors).")
    removed: int
    commits: int = Field(description="Commit messages added.")
    commitsRemoved: int = Field(0, description="Commit messages dropped (no longer in the history).")
    forgotten: int = Field(description="File parts left out: their path is forgotten.")
    secret: int = Field(0, description="File parts left out: their path holds a secret.")


class DocumentForgetAnswer(_Answer):
    """The path kept out, and how many files it dropped (with ``undo``: whether it was kept out,
    and is now let back in)."""

    containerTag: str
    path: str
    dropped: int
    undone: bool = False
