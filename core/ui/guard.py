"""Who may open the memory browser, and how a request proves it.

The browser shows and changes what the agents remember, so it is as private as the
store file. Every request passes :class:`Guard`, an ASGI middleware, in this order:

1. **Host.** The ``Host`` header must name the loopback address the server listens on
   (``127.0.0.1:PORT`` or ``localhost:PORT``). A page elsewhere that rebinds its own DNS
   name to 127.0.0.1 (DNS rebinding) sends its own name and is refused (403).
2. **Token.** Each start makes a random token (:func:`secrets.token_urlsafe`, 32 bytes),
   printed in the URL. ``?token=...`` with the right token opens a session: a random
   session id in a cookie (``HttpOnly``, ``SameSite=Strict``, ``Path=/``, no expiry, so
   it ends with the browser) and a 303 to the same page without the token, which keeps it
   out of the history. A wrong token is refused (401).
3. **Session.** Any other request needs a session cookie this process issued, else 401.
   Another local user, or a page in the same browser (which cannot send a Strict cookie
   cross-site), gets nothing.
4. **Origin.** A state-changing request (anything but GET/HEAD) must carry an ``Origin``
   equal to the server's own; a missing or foreign one is refused (403). Its body may be
   at most :data:`MAX_BODY_BYTES`.
5. **CSRF token.** Each session has a random CSRF token; every form carries it and
   :func:`checked_form` refuses a POST whose ``csrf`` field differs (403).

Every answer carries a Content-Security-Policy that allows nothing but this origin's
own styles (no script at all), ``frame-ancestors 'none'``, ``Referrer-Policy:
same-origin`` (nothing reaches another site), ``X-Content-Type-Options: nosniff`` and
``Cache-Control: no-store``.
The rules follow the OWASP Cross-Site Request Forgery Prevention Cheat Sheet (origin
verification plus synchronizer token) and its DNS-rebinding advice for local servers
(check Host).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

if TYPE_CHECKING:
    from starlette.datastructures import FormData
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_BODY_BYTES", "MAX_SESSIONS", "Guard", "Refused", "Session", "checked_form"]

#: Largest request body accepted, in bytes: a memory is at most 20,000 characters
#: (core/embedded/store.py MAX_CONTENT_CHARS), up to 4 bytes each in UTF-8, form-encoded (x3).
MAX_BODY_BYTES = 256 * 1024

#: Sessions kept per start; the oldest is dropped past this (a person opens a few tabs,
#: not thousands; a loop opening sessions must not grow memory without bound).
MAX_SESSIONS = 64

_SAFE_METHODS = frozenset({"GET", "HEAD"})

_HEADERS = [
    (b"content-security-policy",
     b"default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
     b"frame-ancestors 'none'; base-uri 'none'"),
    # Not no-referrer: under it a browser sends "Origin: null" with a same-origin form
    # POST (Fetch standard, "serialize a request origin"), and the Origin check needs it.
    (b"referrer-policy", b"same-origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


class Refused(Exception):
    """A request the guard or a form check turns away.

    Attributes:
        status: HTTP status (400, 401, 403 or 413).
        message: What a person reads on the page.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Session:
    """One browser session opened with the token.

    Attributes:
        id: The cookie value (random, 32 bytes).
        csrf: The token every form of this session must send back.
    """

    id: str
    csrf: str


class Guard:
    """ASGI middleware enforcing the rules in this module's docstring.

    Args:
        app: The application behind it.
        port: The port the server listens on (Host and Origin must name it).
        token: The per-start token; default a fresh random one.

    The session reaches the app as ``request.state.session`` (a :class:`Session`).
    """

    def __init__(self, app: ASGIApp, *, port: int, token: str | None = None) -> None:
        self.app = app
        self.port = int(port)
        self.token = token or secrets.token_urlsafe(32)
        self.cookie = f"bli_memory_ui_{self.port}"  # cookies ignore ports: one name per server
        self.hosts = frozenset({f"127.0.0.1:{self.port}", f"localhost:{self.port}"})
        self.origins = frozenset(f"http://{h}" for h in self.hosts)
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    @property
    def url(self) -> str:
        """The URL that opens a session: ``http://127.0.0.1:PORT/?token=...``."""
        return f"http://127.0.0.1:{self.port}/?{urlencode({'token': self.token})}"

    def open_session(self) -> Session:
        """A new session (what the token buys); the oldest is dropped past :data:`MAX_SESSIONS`."""
        session = Session(id=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32))
        self._sessions[session.id] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        from starlette.requests import Request

        request = Request(scope)
        try:
            redirect = self._check(request)
        except Refused as exc:
            await _refusal(exc, scope, receive, send)
            return
        if redirect is not None:
            location, session = redirect
            headers = [(b"location", location.encode("latin-1")),
                       (b"set-cookie", self._cookie_header(session).encode("latin-1")), *_HEADERS]
            await send({"type": "http.response.start", "status": 303, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        scope.setdefault("state", {})["session"] = self._sessions[request.cookies[self.cookie]]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, _limited(receive), send_with_headers)

    def _check(self, request: Request) -> tuple[str, Session] | None:
        """Raise :class:`Refused`, return a (location, new session) redirect, or None to go on."""
        if request.headers.get("host", "") not in self.hosts:
            raise Refused(403, "This page answers only at 127.0.0.1 or localhost on its own port "
                               "(the Host header named another: a DNS-rebinding guard).")
        token = request.query_params.get("token")
        if token is not None:
            if not secrets.compare_digest(token.encode("utf-8", "replace"), self.token.encode()):
                raise Refused(401, "This link's token is not this server's. Open the URL that "
                                   "`bli-memory-mcp ui` printed when it started.")
            if request.method not in _SAFE_METHODS:
                raise Refused(403, "A token opens a session with a GET only.")
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            # One leading slash: "//host/..." would be a redirect to another site.
            location = "/" + request.url.path.lstrip("/") + (f"?{urlencode(rest)}" if rest else "")
            return location, self.open_session()
        sid = request.cookies.get(self.cookie)
        if not sid or sid not in self._sessions:
            raise Refused(401, "No session: open the URL that `bli-memory-mcp ui` printed "
                               "when it started (it holds this start's token).")
        if request.method not in _SAFE_METHODS:
            if request.headers.get("origin") not in self.origins:
                raise Refused(403, "A change must come from this page itself (the Origin header "
                                   "was missing or named another site); nothing was changed.")
            length = request.headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
                raise Refused(413, f"The form is larger than {MAX_BODY_BYTES // 1024} KB; "
                                   "nothing was changed.")
        return None

    def _cookie_header(self, session: Session) -> str:
        return f"{self.cookie}={session.id}; HttpOnly; SameSite=Strict; Path=/"


def _limited(receive: Receive) -> Receive:
    """``receive`` that refuses a body past :data:`MAX_BODY_BYTES` (chunked, no length)."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY_BYTES:
                raise Refused(413, "The form is too large; nothing was changed.")
        return message

    return wrapped


async def _refusal(exc: Refused, scope: Scope, receive: Receive, send: Send) -> None:
    from starlette.responses import PlainTextResponse

    response = PlainTextResponse(f"{exc.status}: {exc.message}\n", status_code=exc.status)
    response.raw_headers.extend(_HEADERS)
    await response(scope, receive, send)


async def checked_form(request: Request) -> FormData:
    """The POSTed form, once its ``csrf`` field matches the session's token.

    Raises:
        Refused: 403 when the CSRF token is missing or wrong.
    """
    form = await request.form()
    session: Session = request.state.session
    sent = form.get("csrf")
    if not isinstance(sent, str) or not secrets.compare_digest(sent.encode(), session.csrf.encode()):
        raise Refused(403, "The form's CSRF token is missing or stale: reload the page and try again; "
                           "nothing was changed.")
    return form
