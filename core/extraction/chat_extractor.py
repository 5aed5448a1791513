"""The ``openai`` extractor: any OpenAI-compatible ``/chat/completions`` endpoint.

Used only when the person sets ``BLI_MEMORY_EXTRACT_URL`` (and ``BLI_MEMORY_EXTRACT_MODEL``,
optionally ``BLI_MEMORY_EXTRACT_API_KEY``); the default extractor never needs it. Text
reaching it has already been redacted (:func:`bli_memory.core.extraction.reconcile.distil`
redacts first). httpx is imported only when it extracts.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from bli_memory.core.extraction.statements import KINDS, MAX_STATEMENT_CHARS, MAX_STATEMENTS, Statement

if TYPE_CHECKING:
    from bli_memory.core.settings import Settings

__all__ = ["ChatCompletionsExtractor"]



_SYSTEM_PROMPT = """\
You keep the long-term memory of a software project for coding agents.
From the conversation excerpt, list the durable statements worth remembering in later
sessions: decisions and their reasons, the person's preferences, project conventions,
facts about the project (paths, services, versions, hosts), commands that worked, and
fixes to errors (the error and its cause or fix). Skip greetings, thanks, questions,
plans, progress reports and anything only true for this moment.
Write each statement as one self-contained sentence in the third person ("The user
prefers ...", "The project uses ..."). Never include secrets or [REDACTED] values.
Answer with JSON only: {"facts": [{"text": "...", "kind": "decision|preference|convention|fact|command|fix"}]}
and {"facts": []} when nothing is worth keeping."""


def _chat_url(base: str) -> str:
    base = base.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return base + "/chat/completions"


def _json_object(content: str) -> Any:
    """The first JSON object or array in a model's answer (code fences tolerated)."""
    text = content.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    for opener in ("{", "["):
        start = text.find(opener)
        if start < 0:
            continue
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[start:])
            return obj
        except ValueError:
            continue
    raise ValueError("no JSON in the answer")


class ChatCompletionsExtractor:
    """Extraction by any OpenAI-compatible chat completions endpoint.

    Args:
        url: Base URL (``http://127.0.0.1:11434/v1``) or the full
            ``.../chat/completions`` URL.
        model: Model name sent in the request.
        api_key: Bearer token, or None for endpoints without auth.
        timeout: Seconds for the whole request.
        transport: An httpx transport (tests and custom networking); default: httpx's.

    The request is one ``POST`` with ``temperature: 0`` and a system prompt asking
    for ``{"facts": [{"text", "kind"}]}`` JSON (OpenAI Chat Completions API,
    ``choices[0].message.content``).
    """

    name = "openai"

    def __init__(
        self,
        url: str,
        *,
        model: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        transport: Any | None = None,
    ) -> None:
        self.url = _chat_url(url)
        self.model = model
        self._api_key = api_key
        self.timeout = timeout
        self._transport = transport

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatCompletionsExtractor:
        """Build it from ``BLI_MEMORY_EXTRACT_URL``/``_MODEL``/``_API_KEY``.

        Raises:
            ConfigError: no URL or no model is configured.
        """
        from bli_memory.core.errors import ConfigError

        if not settings.extract_url:
            raise ConfigError("BLI_MEMORY_EXTRACT_URL is not set", reason="config_invalid")
        if not settings.extract_model:
            raise ConfigError("BLI_MEMORY_EXTRACT_MODEL is not set", reason="config_invalid")
        key = settings.extract_api_key.get_secret_value() if settings.extract_api_key else None
        return cls(settings.extract_url, model=settings.extract_model, api_key=key)

    def extract(self, text: str) -> list[Statement]:
        """See :meth:`~bli_memory.core.extraction.statements.Extractor.extract`.

        Raises:
            ServiceError: reason ``timeout``, ``dashboard_unreachable`` (no connection),
                ``http_<status>`` or ``bad_response`` (an answer that is not the JSON
                asked for).
        """
        import httpx

        from bli_memory.core.errors import ServiceError
        from bli_memory.core.extraction.injected import strip_captured

        body = strip_captured(text or "").strip()
        if not body:
            return []
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        payload = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": _SYSTEM_PROMPT},
                {"role": "user", "content": body},
            ],
        }
        try:
            with httpx.Client(timeout=self.timeout, transport=self._transport) as client:
                response = client.post(self.url, json=payload, headers=headers)
        except httpx.TimeoutException as exc:
            raise ServiceError("the extraction endpoint timed out", reason="timeout") from exc
        except httpx.HTTPError as exc:
            raise ServiceError(
                "the extraction endpoint is unreachable", reason="dashboard_unreachable"
            ) from exc
        if response.status_code >= 400:
            raise ServiceError(
                f"the extraction endpoint answered HTTP {response.status_code}",
                reason=f"http_{response.status_code}",
            )
        try:
            content = response.json()["choices"][0]["message"]["content"]
            data = _json_object(content)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ServiceError(
                "the extraction endpoint's answer is not usable", reason="bad_response"
            ) from exc
        items = data.get("facts", []) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ServiceError("the extraction endpoint's answer is not usable", reason="bad_response")
        out: list[Statement] = []
        seen: set[str] = set()
        for item in items:
            if isinstance(item, str):
                item = {"text": item}
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                continue
            statement = " ".join(item["text"].split())
            if not statement or len(statement) > MAX_STATEMENT_CHARS or statement.lower() in seen:
                continue
            kind = str(item.get("kind", "fact")).lower()
            seen.add(statement.lower())
            out.append(Statement(text=statement, kind=kind if kind in KINDS else "fact"))  # type: ignore[arg-type]
            if len(out) >= MAX_STATEMENTS:
                break
        return out

