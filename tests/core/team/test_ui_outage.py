"""The service's memory pages while Postgres is down: a 503 page that says so, at once,
and the same session works again when Postgres is back (a dedicated real server is
stopped and started, as in ``test_postgres_outage.py``)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.core.team import pgserver
from tests.core.team.test_postgres_outage import dedicated, served  # noqa: F401 (fixtures)


def test_pages_answer_503_while_postgres_is_down_and_recover(served: Any, dedicated: Any) -> None:  # noqa: F811
    base, token = served
    with httpx.Client(base_url=base, timeout=30) as c:
        r = c.post("/ui/login", data={"token": token}, headers={"Origin": base}, follow_redirects=False)
        assert r.status_code == 303
        assert c.get("/ui/").status_code == 200
        with pgserver.outage(dedicated):
            # Answered while Postgres is still down: a page that waited for the database
            # would outlast the outage (and this request's 15 s timeout).
            r = c.get("/ui/", follow_redirects=False, timeout=15)
            assert r.status_code == 503 and "database did not answer" in r.text
        deadline = time.monotonic() + 30
        while c.get("/ui/", follow_redirects=False).status_code != 200:
            assert time.monotonic() < deadline, "the pages never came back"
            time.sleep(0.5)
