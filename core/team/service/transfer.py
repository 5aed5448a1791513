"""The transfer doors of the service: audit, export and import of the caller's own rows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.team.service import models as m
from bli_memory.core.team.service.door import acting

if TYPE_CHECKING:
    from starlette.requests import Request

    from bli_memory.core.team.postgres.access import Principal

__all__ = ["audit", "export", "import_"]


def audit(request: Request, p: Principal, req: m.AuditRequest) -> tuple[int, m.Audit]:
    """``POST /api/memory/audit``: check (``repair``: rebuild) the caller's own rows."""
    return 200, m.Audit.model_validate(acting(request, p).audit(repair=req.repair))


def export(request: Request, p: Principal, req: m.ExportRequest) -> tuple[int, m.ExportAnswer]:
    """``POST /api/memory/export``: one page of the caller's own rows (``after`` cursor)."""
    from bli_memory.core.team.postgres.transfer import EXPORT_PAGE, EXPORT_PAGE_MAX

    if not req.after.isdigit() or len(req.after) > 19:
        raise InvalidInputError("after must be the next cursor of the previous page")
    limit = EXPORT_PAGE if req.limit is None else req.limit
    if not 1 <= limit <= EXPORT_PAGE_MAX:
        raise InvalidInputError(f"limit must be an integer from 1 to {EXPORT_PAGE_MAX}")
    records, following = acting(request, p).transfer.export_page(space=req.containerTag, after=int(req.after),
                                                        limit=limit)
    return 200, m.ExportAnswer(records=[m.ExportRecord.model_validate(r) for r in records],
                               next=str(following) if following is not None else None)


def import_(request: Request, p: Principal, req: m.ImportRequest) -> tuple[int, m.ImportAnswer]:
    """``POST /api/memory/import``: exported rows, all or nothing; ids present are skipped."""
    res = acting(request, p).import_records(req.records, dry_run=req.dryRun, offset=req.offset,
                                            chain_ids=req.chainIds or [])
    return 200, m.ImportAnswer(**res, dryRun=req.dryRun)
