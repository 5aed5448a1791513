"""The ``openai`` extractor: any OpenAI-compatible ``/chat/completions`` endpoint.

Used only when the person sets ``BLI_MEMORY_EXTRACT_URL`` (and ``BLI_MEMORY_EXTRACT_MODEL``,
optionally ``BLI_MEMORY_EXTRACT_API_KEY``); the default extractor never needs it. Text
reaching it has already been redacted (:func:`bli_memory.core.extraction.reconcile.distil`
redacts first). httpx is imported only when it extracts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from bli_memory.core.extraction.model_facts import INSTRUCTIONS, json_in, statements_from
from bli_memory.core.extraction.statements import Statement

if TYPE_CHECKING:
    from bli_memory.core.settings import Settings

__all__ = ["ChatCompletionsExtractor"]



def _chat_url(base: str) -> str:
    base = base.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    return base + "/chat/completions"


class ChatCompletionsExtractor:
    """Extraction by any OpenAI-compatible chat completions endpoint.

    Args:
        url: Base URL (``http://127.0.0.1:11434/v1``) or the full
            ``.../chat/completions`` URL.
        model: Model name sent in the request.
        api_key: Bearer token, or None for endpoints without auth.
        timeout: Seconds for the whole request.
        transport: An httpx transport (tests and custom networking); default: httpx's.

    The request is one ``POST`` with ``temperature: 0`` and the instructions of
    :mod:`~bli_memory.core.extraction.model_facts` as the system prompt (the answer is
    ``{"facts": [...]}`` JSON in ``choices[0].message.content``, OpenAI Chat Completions API).
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
            ServiceError: as :meth:`extract_reported`.
        """
        return self.extract_reported(text)[0]

    def extract_reported(self, text: str) -> tuple[list[Statement], dict[str, Any]]:
        """The statements and the request's spend: ``{"extractor": "openai", "model",
        "input_tokens", "output_tokens", "cost_usd": None, "request_s"}`` (tokens from the
        answer's ``usage``, None when the endpoint gives none).

        Raises:
            ServiceError: reason ``timeout``, ``dashboard_unreachable`` (no connection),
                ``http_<status>`` or ``bad_response`` (an answer that is not the JSON
                asked for).
        """
        import httpx

        from bli_memory.core.errors import ServiceError
        from bli_memory.core.extraction.injected import strip_captured

        report: dict[str, Any] = {"extractor": "openai", "model": self.model, "input_tokens": None,
                                  "output_tokens": None, "cost_usd": None, "request_s": None}
        body = strip_captured(text or "").strip()
        if not body:
            return [], report
        started = time.monotonic()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        payload = {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": INSTRUCTIONS},
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
        report["request_s"] = round(time.monotonic() - started, 3)
        try:
            answer = response.json()
            usage = answer.get("usage") or {}
            report.update(input_tokens=usage.get("prompt_tokens"),
                          output_tokens=usage.get("completion_tokens"))
            return statements_from(json_in(answer["choices"][0]["message"]["content"])), report
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ServiceError(
                "the extraction endpoint's answer is not usable", reason="bad_response"
            ) from exc
