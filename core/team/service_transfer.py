"""The transfer doors of the service: audit, export and import of the caller's own rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.team.service_door import (
    MAX_IMPORT_RECORDS,
    acting,
    body_bool,
    body_int,
    body_str,
    body_tag,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from bli_memory.core.team.pg_access import Principal

__all__ = ["audit", "export", "import_"]


def audit(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/audit``: check (``repair``: rebuild) the caller's own rows."""
    return 200, acting(request, p).audit(repair=body_bool(body, "repair"))


def export(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/export``: one page of the caller's own rows (``after`` cursor)."""
    from bli_memory.core.team.pg_transfer import EXPORT_PAGE, EXPORT_PAGE_MAX

    tag = body_tag(body) if body.get("containerTag") is not None else None
    after = body_str(body, "after") or "0"
    if not after.isdigit() or len(after) > 19:
        raise InvalidInputError("after must be the next cursor of the previous page")
    records, following = acting(request, p).export_page(
        space=tag, after=int(after), limit=body_int(body, "limit", EXPORT_PAGE, 1, EXPORT_PAGE_MAX))
    return 200, {"records": records, "next": str(following) if following is not None else None}


def import_(request: Request, p: Principal, body: dict[str, Any]) -> tuple[int, Any]:
    """``POST /api/memory/import``: exported rows, all or nothing; ids present are skipped."""
    records = body.get("records")
    if not isinstance(records, list) or len(records) > MAX_IMPORT_RECORDS:
        raise InvalidInputError(f"records must be a list of at most {MAX_IMPORT_RECORDS} exported rows")
    chain_ids = body.get("chainIds") or []
    if not isinstance(chain_ids, list) or len(chain_ids) > MAX_IMPORT_RECORDS or not all(
        isinstance(c, str) for c in chain_ids
    ):
        raise InvalidInputError(f"chainIds must be a list of at most {MAX_IMPORT_RECORDS} ids")
    res = acting(request, p).import_records(records, dry_run=body_bool(body, "dryRun"),
                                            offset=body_int(body, "offset", 0, 0, 10**9), chain_ids=chain_ids)
    return 200, {**res, "dryRun": body_bool(body, "dryRun")}
