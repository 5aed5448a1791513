"""Settings of BLI Memory, read from ``BLI_MEMORY_*`` environment variables.

The variables named by the BLI Memory spec keep their names and meaning:
``BLI_MEMORY_CONTAINER_TAG``, ``BLI_MEMORY_ISOLATE_WORKTREES``,
``BLI_MEMORY_DEVICE_TOKEN``, ``BLI_MEMORY_DASHBOARD_URL`` and ``BLI_MEMORY_DAEMON``.
The rest are ours and documented on each field. Paths derive from ``HOME`` and the
XDG variables (see :mod:`bli_memory.core.paths`).

This module imports pydantic; the hook entry point must not import it (it reads the
few variables it needs with the standard library) and only the engine path does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from bli_memory.core import defaults, paths

__all__ = ["KEYWORD_MIN_ROWS", "SHIPPED_EMBEDDER", "VECTOR_MIN_ROWS", "Settings", "load_settings"]

#: The embedding model inside the package (``core/memory/embeddings.py`` ``MODEL_NAME``),
#: defined in :mod:`bli_memory.core.defaults` so the hooks' daemon client can use it.
SHIPPED_EMBEDDER = defaults.SHIPPED_EMBEDDER

#: Default side-index thresholds (live rows in the spaces searched; core/embedded/side_indexes.py).
#: Measured in docs/benchmarks.md: at 10k rows the two FTS5 queries are about half of a 7-13 ms
#: search, and the BM25 index answers in 0.1 ms after a 0.1 s build, ranking the same up to
#: near-ties, so it starts early; the exact vector scan stays under ~5 ms up to ~50k rows and
#: HNSW is approximate (recall@10 0.85-0.91), so it starts only where the scan stops fitting a
#: prompt's budget.
KEYWORD_MIN_ROWS = 5_000
VECTOR_MIN_ROWS = 50_000


class Settings(BaseSettings):
    """Every setting, with its environment variable ``BLI_MEMORY_<FIELD>``.

    Raises:
        pydantic.ValidationError: when a variable has a value of the wrong type;
            :func:`load_settings` converts it to :class:`~bli_memory.core.errors.ConfigError`.
    """

    model_config = SettingsConfigDict(env_prefix="BLI_MEMORY_", extra="ignore", frozen=True)

    # --- the spec's variables -------------------------------------------------------
    container_tag: str | None = Field(
        default=None, description="Force the memory space instead of deriving it from the folder."
    )
    isolate_worktrees: bool = Field(
        default=False, description="Give each git worktree its own space rather than the repo's."
    )
    device_token: SecretStr | None = Field(
        default=None, description="Device token for the memory service instead of the session file."
    )
    dashboard_url: str | None = Field(
        default=None, description="Base URL of the memory service; unset means the embedded store."
    )
    daemon: bool = Field(default=True, description="0 turns the resident daemon route off.")

    # --- ours ---------------------------------------------------------------------
    data_dir: Path | None = Field(
        default=None, description="Folder of the embedded store (default: XDG data dir / bli-memory)."
    )
    similarity_floor: float = Field(
        default=0.35,
        ge=-1.0,
        le=1.0,
        description=(
            "Hard floor of the prompt hook: a prompt whose best hit has a lower cosine similarity "
            "gets nothing, whatever the injection gate says (core/memory/relevance.py); an exact keyword or "
            "identifier hit passes regardless. Not a calibrated decision point: the gate decides above "
            "it. On LoCoMo dev the best hit of 99.7 % of questions in their own space reaches 0.35 "
            "(docs/benchmarks.md, hook section); the spec's 0.55 was for another model."
        ),
    )
    recall_limit: int = Field(default=5, ge=1, le=20, description="Hits the prompt hook injects at most.")
    recall_budget_chars: int = Field(
        default=6000, ge=200, description="Upper bound on one injected block, in characters."
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        default="warning", description="Level of the log lines written to stderr."
    )
    log_format: Literal["console", "json"] = Field(default="console", description="stderr log format.")
    embedder_threads: int | None = Field(
        default=None, ge=1, le=64, description="onnxruntime intra-op threads (default: up to 4)."
    )
    keyword_index_min_rows: int = Field(
        default=KEYWORD_MIN_ROWS,
        ge=0,
        description="Live memories in a space from which long-lived processes answer keyword "
        "search from the BM25 side index (tantivy) instead of FTS5 (docs/benchmarks.md).",
    )
    vector_index_min_rows: int = Field(
        default=VECTOR_MIN_ROWS,
        ge=0,
        description="Live memories in a space from which long-lived processes answer vector "
        "search from the HNSW side index (usearch) instead of the exact scan.",
    )
    embedder: str = Field(
        default=SHIPPED_EMBEDDER,
        description="Embedding model by registered name (register_embedders plugin hook; "
        "mpnet once installed) or the absolute path (or ~/...) of a model folder "
        "(docs/configuration.md).",
    )
    experience_tz: str = Field(
        default="ICT",
        description="Time zone of the lines in ~/.codex/AGENT-EXPERIENCE.md: an IANA name "
        "(Europe/Berlin) or ICT / UTC; default ICT (Asia/Bangkok, UTC+7), the seed team's zone.",
    )
    extractor: str | None = Field(
        default=None,
        description="Extractor for extract jobs: default (rules, offline), openai or host; default: "
        "the choice `install --extractor` saved, else openai when extract_url is set, else default.",
    )
    extract_host: str | None = Field(
        default=None,
        description="The host whose own CLI and login the host extractor uses (claude, codex, gemini); "
        "overrides the saved choice.",
    )
    extract_host_model: str | None = Field(
        default=None, description="Model the host extractor asks its host for; default: the host's small one."
    )
    extract_daily_requests: int | None = Field(
        default=None, ge=0, description="Most host-model requests per UTC day (default 200); then the rules."
    )
    extract_max_tokens: int | None = Field(
        default=None, ge=200,
        description="Most tokens of session digest per host-model request (default 4000).",
    )
    extract_timeout_s: float | None = Field(
        default=None, gt=0, le=86_400,
        description="Seconds one host-model request may take before its processes are killed (default 120).",
    )
    extract_url: str | None = Field(
        default=None, description="OpenAI-compatible endpoint (base URL or .../chat/completions)."
    )
    extract_model: str | None = Field(default=None, description="Model name sent to extract_url.")
    extract_api_key: SecretStr | None = Field(default=None, description="Bearer key for extract_url, if any.")
    extract_plugins: str | None = Field(
        default=None,
        description="Debugging hook: comma-separated modules registered as plugins before the "
        "extractor is chosen (an extractor without an entry point).",
    )

    @field_validator("container_tag", "dashboard_url", "data_dir", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value

    @field_validator("embedder", mode="before")
    @classmethod
    def _blank_is_shipped(cls, value: object) -> object:
        # An empty BLI_MEMORY_EMBEDDER (a shell's `export BLI_MEMORY_EMBEDDER=`) means unset.
        if isinstance(value, str):
            return value.strip() or SHIPPED_EMBEDDER
        return value

    @field_validator("data_dir")
    @classmethod
    def _absolute_dir(cls, value: Path | None) -> Path | None:
        # A relative folder would put a store in whatever folder each hook runs in.
        if value is not None and not Path(value).expanduser().is_absolute():
            raise ValueError(f"{str(value)!r} is not an absolute path (or ~/...)")
        return value

    @field_validator("embedder")
    @classmethod
    def _absolute_model_path(cls, value: str) -> str:
        # A hook runs in the project's folder, an MCP server wherever its host starts it and
        # the daemon in /: a relative model folder would be another folder in each, and a
        # store is of one model. Refused like a relative data_dir, with the folder it means here.
        if paths.is_model_path(value) and not Path(value).expanduser().is_absolute():
            raise ValueError(f"{value!r} is a relative path, which each process would read from its own "
                             f"working folder (the daemon's is /); give an absolute path (or ~/...), "
                             f"from here {Path(value).resolve()}")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("container_tag")
    @classmethod
    def _valid_tag(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from bli_memory.core.models import validate_tag

        return validate_tag(value)  # ValueError names the rule (docs/spaces.md)

    @field_validator("dashboard_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value

    @field_validator("experience_tz")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from bli_memory.core.errors import ConfigError
        from bli_memory.core.timezones import resolve_timezone

        try:
            resolve_timezone(value)
        except ConfigError as exc:
            raise ValueError(exc.message.split(" is invalid: ", 1)[-1]) from None
        return value

    @property
    def store_path(self) -> Path:
        """Path of the embedded SQLite store."""
        if self.data_dir is not None:
            return Path(self.data_dir).expanduser() / "memory.sqlite3"
        return paths.store_path()

    @property
    def remote(self) -> bool:
        """True when a memory service URL is configured (env var or paired session)."""
        return self.dashboard_url is not None or paths.session_file_path().exists()


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment, converting bad values to ``ConfigError``.

    Args:
        **overrides: field values that win over the environment (tests, CLI flags).

    Returns:
        A frozen :class:`Settings`.

    Raises:
        ConfigError: a ``BLI_MEMORY_*`` variable has a value that cannot be used; the
            message names the variable.
    """
    from pydantic import ValidationError

    from bli_memory.core.errors import ConfigError

    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error.get("loc") else "?"
            message = str(error.get("msg", "bad value")).removeprefix("Value error, ")
            problems.append(f"BLI_MEMORY_{field.upper()} is invalid: {message}")
        raise ConfigError("; ".join(problems), reason="config_invalid") from exc
