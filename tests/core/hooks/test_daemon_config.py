"""Which settings make a caller's daemon another's (issue 31, item 3)."""

from __future__ import annotations

from bli_memory.core.hooks import daemon_client
from bli_memory.core.settings import Settings

#: Settings that change how a caller waits, which route it takes, where its space is or how
#: it logs, never what the engine computes.
NOT_ENGINE = {"BLI_MEMORY_LOG_LEVEL", "BLI_MEMORY_LOG_FORMAT", "BLI_MEMORY_EMBEDDER_THREADS"}


def test_every_setting_is_either_an_engine_setting_or_known_not_to_be_one() -> None:
    fields = {f"BLI_MEMORY_{name.upper()}" for name in Settings.model_fields}
    known = (daemon_client._ENGINE_VARS | set(daemon_client._SPACE_VARS) | daemon_client._ROUTE_VARS
             | NOT_ENGINE)
    assert fields - known == set(), "a new setting: does it change what the daemon computes?"
    assert daemon_client._ENGINE_VARS - fields == {"BLI_MEMORY_DATABASE_URL"}


def test_a_tools_path_or_a_log_level_does_not_count_and_keys_are_hashed() -> None:
    base = {"HOME": "/home/me", "BLI_MEMORY_SIMILARITY_FLOOR": "0.4"}
    harmless = {**base, "BLI_MEMORY_HERMES_BIN": "/opt/hermes/bin/hermes", "BLI_MEMORY_LOG_LEVEL": "debug",
                "BLI_MEMORY_SHARED_DIR": "/work/shared"}
    assert daemon_client.config_of(harmless) == daemon_client.config_of(base)
    keyed = daemon_client.config_of({**base, "BLI_MEMORY_EXTRACT_API_KEY": "sk-live-123"})
    assert keyed["BLI_MEMORY_EXTRACT_API_KEY"].startswith("sha256:")
    assert "sk-live-123" not in repr(keyed)
