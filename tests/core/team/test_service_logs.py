"""The real service process logs through the one configuration: JSON lines on stderr."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest


def test_the_service_logs_json_lines_for_its_doors_and_for_uvicorn(
    start_service: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLI_MEMORY_LOG_FORMAT", "json")
    svc = start_service(log_level="info")
    assert httpx.get(svc.url + "/healthz", timeout=10).status_code == 200
    refused = httpx.post(svc.url + "/api/memory/search", json={"q": "x"}, timeout=10)
    assert refused.status_code == 401  # no device token: a door line all the same
    svc.stop()
    text = svc.stderr()
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    doors = [line for line in lines if line["logger"] == "bli_memory.service"
             and str(line["event"]).startswith("door ")]
    assert doors and all(line["level"] == "info" and str(line["timestamp"]).endswith("Z")
                         for line in doors), text
    assert any(line["logger"] == "uvicorn.error" and "Started server process" in line["event"]
               for line in lines), text
    assert not any("color_message" in line for line in lines)  # no terminal escapes in JSON
    assert "Traceback" not in text
