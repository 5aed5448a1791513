"""Tombstones cover every version of a forgotten memory, on the stores that run capture.

Automatic capture runs inside the embedded engine and inside the team service (on
Postgres), so both must name the older wording of a memory that was updated and then
forgotten; the HTTP client runs no capture of its own and offers no tombstones.
"""

from __future__ import annotations

import pytest


def test_the_versions_a_forgotten_memory_replaced_are_tombstones_too(backend, space: str) -> None:
    if not hasattr(backend, "tombstones"):
        pytest.skip("this backend runs no capture: the service it talks to holds the tombstones")
    first = backend.save("The team decided the API port is 8443 for the billing service.", space=space)
    updated = backend.update("The API listens on port 8443 behind nginx.", space=space, id=first.memory.id)
    backend.forget(space=space, id=updated.memory.id)
    texts = backend.tombstones(space)
    assert texts[:2] == ["The API listens on port 8443 behind nginx.",
                         "The team decided the API port is 8443 for the billing service."]
    assert len(texts) == len(set(texts))
