"""The installer: the ``bli-memory-install-config.v1`` contract and per-host plan/apply/status."""
