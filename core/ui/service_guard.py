"""Who may open the memory browser on the team service, and how a request proves it.

The service's pages (``/ui/`` of ``bli-memory-mcp service``) act as one person, with
that person's device token, and keep no session state on the server: any service
instance in front of the same database accepts a session another one opened.

1. **Sign in.** ``GET /ui/login`` is a form that takes a device token
   (``service token create``); ``POST /ui/login`` checks it like the doors do
   (:meth:`~bli_memory.core.team.postgres.store.PostgresBackend.authenticate`) and sets a session
   cookie (``HttpOnly``, ``SameSite=Strict``, ``Path`` the mount, ``Secure`` when the page
   is served over https) that ends with the browser or after :data:`SESSION_SECONDS`.
   The cookie never holds the token: it is ``v1.TOKEN_ID.EXPIRES.MAC``, where MAC is
   HMAC-SHA256 keyed by the token's stored SHA-256 (the only form of the token the
   database keeps), so only someone who held the token, or reads the database, can
   make one. A revoked token ends its sessions at once: every request looks the
   token id up again (:meth:`~bli_memory.core.team.postgres.store.PostgresBackend.device_token_key`).
2. **Or a device token** in ``Authorization: Bearer`` on each request, as the doors take.
3. **Origin.** A state-changing request (anything but GET/HEAD, sign-in included) must
   carry an ``Origin`` whose host is the request's own ``Host`` (the page itself, also
   behind a reverse proxy that keeps ``Host``); a missing or foreign one gets 403.
4. **CSRF token.** Each session's forms carry HMAC-SHA256 of the session under the same
   key; :func:`~bli_memory.core.ui.guard.checked_form` refuses any other (403).

The security headers and the body limit are those of :mod:`~bli_memory.core.ui.guard`.
The rules follow the OWASP Cross-Site Request Forgery Prevention Cheat Sheet (origin
verification plus an HMAC-signed double-submit token) and its Session Management Cheat
Sheet (cookie attributes, server-side expiry).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bli_memory.core.errors import BliMemoryError
from bli_memory.core.ui.guard import (
    _HEADERS,
    _SAFE_METHODS,
    MAX_BODY_BYTES,
    Refused,
    Session,
    _limited,
    _refusal,
)

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from bli_memory.core.team.postgres.access import Principal
    from bli_memory.core.team.postgres.store import PostgresBackend
    from bli_memory.core.ui.app import BrowserState

__all__ = ["COOKIE", "SESSION_SECONDS", "ServiceGuard", "session_cookie"]

#: The session cookie's name.
COOKIE = "bli_memory_service_ui"
#: How long a session lasts at most, in seconds (a working day: a person signs in once
#: a day; a revoked token ends it sooner).
SESSION_SECONDS = 12 * 3600

#: Paths under the mount that need no session (the sign-in page and its stylesheet).
_OPEN = ("/login", "/static/")


def _mac(key: str, message: str) -> str:
    digest = hmac.new(key.encode("ascii"), message.encode("utf-8"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def session_cookie(token_id: str, token_sha256: str, *, now: float | None = None) -> str:
    """The session value for a device token: ``v1.TOKEN_ID.EXPIRES.MAC`` (unix seconds)."""
    expires = int(now if now is not None else time.time()) + SESSION_SECONDS
    return f"v1.{token_id}.{expires}.{_mac(token_sha256, f'session|{token_id}|{expires}')}"


def _csrf(token_sha256: str, session_id: str) -> str:
    return _mac(token_sha256, f"csrf|{session_id}")


class ServiceGuard:
    """ASGI middleware enforcing this module's rules in front of the service's pages.

    Args:
        app: The browser app (:func:`~bli_memory.core.ui.service_app.build_service_app`).
        backend: A callable answering the service's administrative
            :class:`~bli_memory.core.team.postgres.store.PostgresBackend` (it exists once the
            service's lifespan opened the database).

    A signed-in request reaches the app with ``state["session"]`` (a
    :class:`~bli_memory.core.ui.guard.Session`) and ``state["browser"]`` (a
    :class:`~bli_memory.core.ui.app.BrowserState` over the person's
    :class:`~bli_memory.core.team.postgres.store.PostgresBackend`).
    """

    def __init__(self, app: ASGIApp, *, backend: Callable[[], Any]) -> None:
        self.app = app
        self.backend = backend

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import RedirectResponse

        request = Request(scope)
        root = scope.get("root_path", "")
        path = scope["path"][len(root):] if scope["path"].startswith(root) else scope["path"]
        try:
            self._check_origin(request)
            state = scope.setdefault("state", {})
            if not path.startswith(_OPEN):
                try:
                    found = await run_in_threadpool(self._signed_in, request)
                except BliMemoryError as exc:  # Postgres away: the doors' 503, as a page
                    raise Refused(503, f"The service's database did not answer ({exc.reason}); "
                                       "try again in a moment.") from exc
                if found is None:
                    if request.method in _SAFE_METHODS and "authorization" not in request.headers:
                        await RedirectResponse(f"{root}/login", status_code=303)(scope, receive, send)
                        return
                    raise Refused(401, "Sign in first: open the sign-in page and give a device "
                                       "token (`bli-memory-mcp service token create`).")
                state["session"], state["browser"] = found
        except Refused as exc:
            await _refusal(exc, scope, receive, send)
            return

        async def send_with_headers(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], *_HEADERS]
            await send(message)

        try:
            await self.app(scope, _limited(receive), send_with_headers)
        except Refused as exc:
            await _refusal(exc, scope, receive, send)

    @staticmethod
    def _check_origin(request: Any) -> None:
        if request.method in _SAFE_METHODS:
            return
        origin = request.headers.get("origin") or ""
        host = request.headers.get("host") or ""
        parts = urlsplit(origin)
        if not host or parts.scheme not in ("http", "https") or parts.netloc.lower() != host.lower():
            raise Refused(403, "A change must come from this page itself (the Origin header was "
                               "missing or named another site); nothing was changed.")
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            raise Refused(413, f"The form is larger than {MAX_BODY_BYTES // 1024} KB; nothing was changed.")

    def _signed_in(self, request: Any) -> tuple[Session, Any] | None:
        """The session and the person's browser state, or None when the request proves nobody."""
        from bli_memory.core.team.postgres.store import hash_token

        admin = self.backend()
        header = request.headers.get("authorization", "")
        scheme, _, bearer = header.partition(" ")
        if header:
            if scheme.lower() != "bearer" or not bearer.strip():
                return None
            principal = admin.authenticate(bearer.strip())
            if principal is None:
                return None
            sid, key = f"bearer.{principal.device_id}", hash_token(bearer.strip())
        else:
            sid = request.cookies.get(COOKIE, "")
            parts = sid.split(".")
            if len(parts) != 4 or parts[0] != "v1" or not parts[2].isdigit() or int(parts[2]) < time.time():
                return None
            found = admin.device_token_key(parts[1])
            if found is None:
                return None
            principal, key = found
            if not hmac.compare_digest(parts[3], _mac(key, f"session|{parts[1]}|{parts[2]}")):
                return None
        return Session(id=sid, csrf=_csrf(key, sid)), _browser(admin, principal)


def _browser(admin: PostgresBackend, principal: Principal) -> BrowserState:
    from bli_memory.core.ui.app import BrowserState, SignedIn

    backend = admin.for_person(principal.person_id, device_id=principal.device_id)
    who = SignedIn(person=principal.person, device=principal.device, browse=backend.browse)
    return BrowserState(backend=backend, home_space="", service=who)
