"""How a door of the memory service answers: token, body, handler, error object, metrics.

A door is a module-level handler ``handler(request, principal, parsed) -> (status,
answer[, after])`` (:mod:`~bli_memory.core.team.service.memory`,
:mod:`~bli_memory.core.team.service.transfer`, :mod:`~bli_memory.core.team.service.capture`);
:func:`door` turns it into a Starlette endpoint that

1. refuses a request without a ``Bearer`` device token (401) and, for a ``POST``, one
   whose headers announce a body the door cannot take (413, 415), before reading it;
2. proves the token (401 when unknown or revoked);
3. reads the body within the time limit (408), checks it is a JSON object no deeper
   than :data:`MAX_BODY_DEPTH` holding only Unicode text, and parses it with the door's
   request model (:mod:`~bli_memory.core.team.service.models`; 400 naming the first problem);
4. runs the handler in a worker thread, renders its answer model, and runs ``after`` (if
   any) once the answer is sent;
5. answers errors as ``{"error": {"reason", "message"}}`` (:func:`error_of`), counts the
   request and its latency, and logs one line without the token or the body.

State lives on ``request.app.state``: ``service`` (the
:class:`~bli_memory.core.team.service.state.ServiceState`) and ``body_timeout``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from bli_memory.core.errors import ConfigError, EmbedderError, InvalidInputError, NotFoundError, StoreError
from bli_memory.core.team.service.http import DoorError

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError
    from starlette.requests import Request
    from starlette.responses import Response

    from bli_memory.core.team.postgres.access import Principal
    from bli_memory.core.team.postgres.store import PostgresBackend
    from bli_memory.core.team.service.state import ServiceState

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_BODY_DEPTH",
    "MAX_IMPORT_BODY_BYTES",
    "MAX_IMPORT_RECORDS",
    "Handler",
    "acting",
    "check_body",
    "door",
    "error_of",
    "parse_request",
    "refusal",
    "service_state",
]

#: Largest request body accepted (a memory is at most 20,000 characters; an extract
#: text at most the stop hook's 12 KB).
MAX_BODY_BYTES = 256 * 1024
#: Largest body of ``POST /api/memory/import`` and most records in it: an exported
#: row is about 3 KB with its vector, at most ~25 KB (20,000 characters of content).
MAX_IMPORT_BODY_BYTES = 16 * 1024 * 1024
MAX_IMPORT_RECORDS = 2000
#: Deepest nesting of a request body (objects and arrays): a memory's metadata may be
#: :data:`~bli_memory.core.memory.records.MAX_METADATA_DEPTH` levels deep inside an import.
MAX_BODY_DEPTH = 128

#: A door's handler: ``(request, principal, parsed body) -> (status, answer)`` or
#: ``(status, answer, after)``: the body parsed with the door's request model (None for a
#: ``GET``), the answer an answer model, and ``after`` run once the answer is sent.
Handler = Callable[["Request", "Principal", Any], tuple[Any, ...]]

_M = TypeVar("_M", bound="BaseModel")

_log = logging.getLogger("bli_memory.service")


# --- reading a body ------------------------------------------------------------------


def _key(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "the body"


def _bounds(model: type[BaseModel], name: str) -> tuple[Any, Any]:
    """The ``ge`` and ``le`` of a model's field, also inside ``Annotated[...] | None``."""
    import typing

    field = model.model_fields.get(name)
    lo = hi = None
    if field is None:
        return lo, hi
    rules: list[Any] = list(field.metadata)
    stack: list[Any] = [field.annotation]
    while stack:
        kind = stack.pop()
        stack.extend(typing.get_args(kind))
        for meta in getattr(kind, "__metadata__", ()):
            rules.extend(getattr(meta, "metadata", [meta]))
    for rule in rules:
        lo = getattr(rule, "ge", lo)
        hi = getattr(rule, "le", hi)
    return lo, hi


def refusal(exc: ValidationError, model: type[BaseModel]) -> InvalidInputError:
    """The :class:`InvalidInputError` of a body its request model refused: its first
    problem, in the words the doors have always used (``containerTag is required``,
    ``limit must be an integer from 1 to 100``). Never echoes the value."""
    e = exc.errors(include_url=False, include_input=False, include_context=True)[0]
    key, kind, ctx = _key(tuple(e["loc"])), e["type"], e.get("ctx") or {}
    if kind == "missing":
        return InvalidInputError(f"{key} is required")
    if kind == "string_type":
        return InvalidInputError(f"{key} must be a string")
    if kind in ("bool_type", "bool_parsing"):
        return InvalidInputError(f"{key} must be true or false")
    if kind in ("int_type", "int_parsing", "int_from_float", "greater_than_equal", "less_than_equal"):
        lo, hi = _bounds(model, str(e["loc"][0]))
        span = f" from {lo} to {hi}" if lo is not None and hi is not None else ""
        return InvalidInputError(f"{key} must be an integer{span}")
    if kind == "dict_type":
        return InvalidInputError(f"{key} must be a JSON object")
    if kind == "list_type":
        return InvalidInputError(f"{key} must be a list")
    if kind == "too_long":
        return InvalidInputError(f"{key} holds more than {ctx.get('max_length')} items")
    if kind == "literal_error":
        return InvalidInputError(f"{key} must be one of {ctx.get('expected')}")
    if kind == "value_error":  # our own validators' messages (a container tag's)
        return InvalidInputError(str(ctx.get("error") or e["msg"]))
    return InvalidInputError(f"{key}: {e['msg']}")


def parse_request(model: type[_M], body: dict[str, Any]) -> _M:
    """``body`` parsed with the door's request model.

    Raises:
        InvalidInputError: :func:`refusal` of the first problem.
    """
    from pydantic import ValidationError

    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise refusal(exc, model) from None


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def check_body(body: dict[str, Any]) -> None:
    """Refuse a body no door can keep: nested over :data:`MAX_BODY_DEPTH`, or text that is not Unicode.

    JSON lets a lone UTF-16 surrogate through (``"\\ud800"``); it is not text, so no
    store, log line or answer could hold it. Walked without recursion.

    Raises:
        InvalidInputError: naming the problem (never echoing the value).
    """
    stack: list[tuple[Any, int]] = [(body, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_BODY_DEPTH:
                raise InvalidInputError(f"the body is nested more than {MAX_BODY_DEPTH} levels deep")
            stack.extend((k, depth) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            if depth > MAX_BODY_DEPTH:
                raise InvalidInputError(f"the body is nested more than {MAX_BODY_DEPTH} levels deep")
            stack.extend((v, depth + 1) for v in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidInputError("the body holds a lone surrogate (\\uD800-\\uDFFF), "
                                        "which is not Unicode text") from None


def error_of(exc: BaseException, door: str) -> DoorError:
    """The answer to a failure of door ``door``: status, closed-set reason, message.

    400 ``invalid_input`` (bad input, also a body nested too deeply), 403 ``read_only``,
    404 ``not_found``, 503 ``store_unavailable`` (502 on the ``experience`` door, whose
    clients retry a failed insert), 500 ``internal`` for anything else.
    """
    if isinstance(exc, DoorError):
        return exc
    if isinstance(exc, InvalidInputError | ConfigError):
        return DoorError(400, "invalid_input", exc.message)
    if isinstance(exc, RecursionError):  # JSON nested deeper than a check below the door expected
        return DoorError(400, "invalid_input", "the body is nested too deeply")
    if isinstance(exc, NotFoundError):
        if exc.reason == "read_only":
            return DoorError(403, "read_only", exc.message)
        return DoorError(404, "not_found", exc.message)
    if isinstance(exc, StoreError | EmbedderError):
        status = 502 if door == "experience" else 503
        return DoorError(status, "store_unavailable", "the memory store could not answer; try again")
    return DoorError(500, "internal", "the service failed to answer")


# --- the state of the app ------------------------------------------------------------


def service_state(request: Request) -> ServiceState:
    """The :class:`~bli_memory.core.team.service.state.ServiceState` of the request's app."""
    state: ServiceState = request.app.state.service
    return state


def acting(request: Request, principal: Principal) -> PostgresBackend:
    """The store as the person (and device) the request's token proved."""
    return service_state(request).backend.for_person(principal.person_id, device_id=principal.device_id)


# --- the door ------------------------------------------------------------------------


def _parsed_body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise InvalidInputError("the body is not JSON") from exc
    except RecursionError as exc:
        raise InvalidInputError(f"the body is nested more than {MAX_BODY_DEPTH} levels deep") from exc
    if not isinstance(body, dict):
        raise InvalidInputError("the body must be a JSON object")
    check_body(body)
    return body


def door(
    name: str, handler: Handler, *, method: str = "POST", max_body: int = MAX_BODY_BYTES,
    request_model: type[BaseModel] | None = None,
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of one door (see the module's steps).

    Args:
        name: The door's name in metrics and log lines (``search``, ``import``, ...).
        handler: The door's :data:`Handler`.
        method: ``POST`` (a JSON body) or ``GET`` (none).
        request_model: The model a ``POST`` body is parsed with (:func:`parse_request`).
        max_body: Largest body in bytes (:data:`MAX_BODY_BYTES`, or
            :data:`MAX_IMPORT_BODY_BYTES` for import).
    """
    import anyio
    from starlette.background import BackgroundTask
    from starlette.responses import JSONResponse

    from bli_memory.core.team.service.http import (
        BODY_TIMEOUT_SECONDS,
        BULK_BODY_TIMEOUT_SECONDS,
        check_headers,
        error_payload,
        read_body,
    )

    def body_timeout_of(request: Request) -> float:
        chosen: float | None = request.app.state.body_timeout
        if chosen is not None:
            return chosen
        return BULK_BODY_TIMEOUT_SECONDS if max_body > MAX_BODY_BYTES else BODY_TIMEOUT_SECONDS

    async def endpoint(request: Request) -> Response:
        st = service_state(request)
        started = time.monotonic()
        status = 500
        who = {"person": "-"}
        try:
            token = _bearer(request)
            if token is None:
                st.auth_failures.inc()
                raise DoorError(401, "unauthorized", "send a device token: Authorization: Bearer <token>")
            if method == "POST":  # headers first: nothing of a refused body is read
                check_headers(request, max_body=max_body)

            def who_is(tok: str) -> Principal:
                principal = st.backend.authenticate(tok)
                if principal is None:
                    st.auth_failures.inc()
                    raise DoorError(401, "unauthorized", "this device token is unknown or revoked")
                who["person"] = principal.person
                return principal

            principal = await anyio.to_thread.run_sync(who_is, token)
            raw = b""
            if method == "POST":
                raw = await read_body(request, max_body=max_body, timeout=body_timeout_of(request))

            def work() -> tuple[Any, ...]:
                parsed = None
                if method == "POST" and request_model is not None:
                    parsed = parse_request(request_model, _parsed_body(raw))
                status, answer, *after = handler(request, principal, parsed)
                payload = answer.model_dump(mode="json", exclude_unset=True)  # as the store answered
                return (status, payload, *after)

            result = await anyio.to_thread.run_sync(work)
            status, payload = result[0], result[1]
            background = None
            if len(result) > 2 and result[2] is not None:
                background = BackgroundTask(result[2])
            return JSONResponse(payload, status_code=status, background=background)
        except Exception as exc:
            err = error_of(exc, name)
            status = err.status
            if status >= 500:
                _log.error("door %s failed: %s", name, type(exc).__name__)
            return JSONResponse(error_payload(err.reason, err.message), status_code=status,
                                headers=err.headers or None)
        finally:
            elapsed = time.monotonic() - started
            st.requests.labels(door=name, status=str(status)).inc()
            st.latency.labels(door=name).observe(elapsed)
            _log.info("door %s -> %s in %d ms (person %s)", name, status, int(elapsed * 1000), who["person"])

    return endpoint
