"""Templates of the memory browser: one Jinja2 environment with autoescaping always on.

Autoescaping is on for every template (not only ``.html``), so a memory holding
``<script>`` renders as text. The only markup placed unescaped is the inline SVG of
:mod:`~bli_memory.core.ui.charts`, which escapes its own text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.templating import Jinja2Templates

__all__ = ["TEMPLATES_DIR", "browser_state", "home_space", "render", "templates", "when"]

TEMPLATES_DIR = Path(__file__).parent / "templates"


def when(value: str | None) -> str:
    """A stored UTC ISO time as ``YYYY-MM-DD HH:MM UTC`` ("" for None; as given if unreadable)."""
    if not value:
        return ""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _snippet(text: str, n: int = 280) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= n else flat[: n - 1] + "\u2026"


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _ms(value: float | None) -> str:
    if value is None:
        return "\u2014"
    if value == float("inf"):
        return "> 30 s"
    return f"\u2264 {value:,.0f} ms"


@cache
def templates() -> Jinja2Templates:
    """The shared :class:`~starlette.templating.Jinja2Templates` (autoescape on)."""
    import jinja2
    from starlette.templating import Jinja2Templates

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    from bli_memory.core.memory.retrieval import matched_in_words

    env.filters.update(when=when, snippet=_snippet, pretty=_pretty, ms=_ms, matched=matched_in_words)
    return Jinja2Templates(env=env)


def browser_state(request: Request) -> Any:
    """The request's :class:`~bli_memory.core.ui.app.BrowserState`: the one the service's
    guard set for the signed-in person, else the app's (the local page); None before
    sign-in on the service."""
    found = getattr(request.state, "browser", None)
    if found is not None:
        return found
    return getattr(request.app.state, "browser", None)


def home_space(state: Any) -> str:
    """The space pages open on: the local page's project space, or on the service the
    person's space with the most live memories.

    Raises:
        InvalidInputError: the home space was refused (``state.home_refused``, a message
            that never holds the tag); the page answers 400 with it.
    """
    if state is None:
        return ""
    if state.home_refused:
        from bli_memory.core.errors import InvalidInputError

        raise InvalidInputError(state.home_refused)
    if state.home_space or state.service is None:
        return str(state.home_space)
    return str(state.service.home_space())


def render(request: Request, name: str, *, status: int = 200, **context: Any) -> Response:
    """Render template ``name`` with ``context`` plus the session's CSRF token, the
    browser's home space, the mount the pages are served under and, on the service, who
    is signed in (``csrf``, ``home``, ``nav``, ``root``, ``service``)."""
    session = getattr(request.state, "session", None)
    state = browser_state(request)
    context.setdefault("nav", "")
    return templates().TemplateResponse(
        request, name, {"csrf": session.csrf if session else "",
                        "home": "" if state is None or state.home_refused else home_space(state),
                        "store_path": str(state.backend.store_path) if state else "",
                        "root": request.scope.get("root_path", ""),
                        "service": state.service if state else None,
                        "on_service": bool(getattr(request.app.state, "service_ui", False)), **context},
        status_code=status,
    )
