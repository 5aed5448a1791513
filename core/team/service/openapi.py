"""The OpenAPI 3.1 document of the service, generated from the door table and its models.

Every door is one :class:`Door` row: path, method, handler, summary, request model and
answer models (:mod:`~bli_memory.core.team.service.models`). The app's routes and
this document are both built from the same rows, so the document cannot forget a door
or describe one that is not served. The schemas come from pydantic
(:func:`pydantic.json_schema.models_json_schema`), under ``components.schemas``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from bli_memory.core.team.service.door import MAX_BODY_BYTES, Handler
from bli_memory.core.team.service.models import Error, Health, Readiness

__all__ = ["COMMON_ERRORS", "Door", "build_document"]

#: Refusals every ``POST`` door may answer (bad body, token, timeout, size, media type,
#: store down); a ``GET`` door only 401.
COMMON_ERRORS = (400, 401, 408, 413, 415, 503)


@dataclass(frozen=True)
class Door:
    """One door of the service.

    Attributes:
        path: The URL path (``/api/memory/search``).
        name: The door's name in metrics and log lines.
        handler: Its :data:`~bli_memory.core.team.service.door.Handler`.
        summary: One line for the document.
        request: The model of its JSON body; None for a ``GET``.
        answers: Status code -> (model, description) of each success answer.
        errors: Refusal codes beyond :data:`COMMON_ERRORS` (403, 404, 409, 502).
        method: ``POST`` or ``GET``.
        max_body: Largest body in bytes.
    """

    path: str
    name: str
    handler: Handler
    summary: str
    request: type[BaseModel] | None
    answers: Mapping[int, tuple[type[BaseModel], str]]
    errors: tuple[int, ...] = ()
    method: str = "POST"
    max_body: int = MAX_BODY_BYTES


def _json(ref: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def build_document(doors: Sequence[Door], *, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``doors`` plus the health, readiness, metrics and document routes.

    Args:
        doors: The door table.
        version: The service's version (``info.version``).

    Returns:
        A JSON-ready dict (lists, never tuples), equal to its own JSON round trip.
    """
    models: list[type[BaseModel]] = [Error, Health, Readiness]
    for d in doors:
        models.extend(m for m, _ in d.answers.values())
        if d.request is not None:
            models.append(d.request)
    unique = list(dict.fromkeys(models))
    refs, defs = models_json_schema([(m, "validation") for m in unique],
                                    ref_template="#/components/schemas/{model}")

    def ref(model: type[BaseModel]) -> dict[str, Any]:
        return dict(refs[(model, "validation")])

    err = _json(ref(Error), "Error with a closed-set reason.")
    paths: dict[str, Any] = {}
    for d in doors:
        responses: dict[str, Any] = {str(code): _json(ref(model), text)
                                     for code, (model, text) in sorted(d.answers.items())}
        refusals = COMMON_ERRORS if d.method == "POST" else (401,)
        responses.update({str(code): err for code in sorted({*refusals, *d.errors})})
        operation: dict[str, Any] = {"summary": d.summary, "operationId": d.name,
                                     "security": [{"deviceToken": []}]}
        if d.request is not None:
            operation["requestBody"] = {"required": True,
                                        "content": {"application/json": {"schema": ref(d.request)}}}
        operation["responses"] = responses
        paths[d.path] = {d.method.lower(): operation}
    plain = {"description": "OK", "content": {"application/json": {"schema": {"type": "object"}}}}
    paths["/healthz"] = {"get": {"summary": "Liveness.", "operationId": "healthz",
                                 "responses": {"200": _json(ref(Health), "Alive.")}}}
    paths["/readyz"] = {"get": {"summary": "Readiness: database, schema and model.", "operationId": "readyz",
                                "responses": {"200": _json(ref(Readiness), "Ready."),
                                              "503": _json(ref(Readiness), "Not ready yet.")}}}
    text = {"description": "Prometheus text format",
            "content": {"text/plain": {"schema": {"type": "string"}}}}
    paths["/metrics"] = {"get": {"summary": "Prometheus metrics.", "operationId": "metrics",
                                 "responses": {"200": text}}}
    paths["/openapi.json"] = {"get": {"summary": "This document.", "operationId": "openapi",
                                      "responses": {"200": plain}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "BLI Memory service", "version": version,
                 "description": "The memory doors: search, save, update, forget, profile, the "
                                "memory controls (info, list, get, audit, export, import), session "
                                "recording and the experience log, for the agents of a team."},
        "components": {
            "securitySchemes": {"deviceToken": {"type": "http", "scheme": "bearer",
                                                "description": "A token from `service token create`."}},
            "schemas": defs.get("$defs", {}),
        },
        "paths": paths,
    }
