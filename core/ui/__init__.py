"""The memory browser: ``bli-memory-mcp ui``, a local web page over the embedded store,
and the same pages on the team service.

See, search, correct and forget what the agents remember. Server-rendered HTML
(Starlette + Jinja2), no JavaScript, no CDN: it works offline. Modules:

- :mod:`~bli_memory.core.ui.guard`: who may open it (the per-start token, the session
  cookie, Host and Origin checks, CSRF tokens, security headers);
- :mod:`~bli_memory.core.ui.app`: the Starlette application and its routes;
- :mod:`~bli_memory.core.ui.pages`: the memory pages (spaces, a memory, edit / forget /
  purge, search);
- :mod:`~bli_memory.core.ui.ops_pages`: recent captures, hook health, experience and ops;
- :mod:`~bli_memory.core.ui.health`: hook latency percentiles from the stats file;
- :mod:`~bli_memory.core.ui.charts`: inline SVG charts;
- :mod:`~bli_memory.core.ui.cli`: the command;
- :mod:`~bli_memory.core.ui.service_app`: the same pages on the team service, under
  ``/ui/`` (:mod:`~bli_memory.core.ui.service_guard`: its sign-in and sessions). Every
  page reads through the memory contract and its browsing reads
  (:attr:`~bli_memory.core.memory.backend.MemoryBackend.browse`), never SQL.

Like ``bli_memory.core``, this ``__init__`` imports nothing.
"""
