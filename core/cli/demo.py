"""``bli-memory-mcp demo``: save and recall through the real MCP server, in a scratch store.

Starts this package's own ``bli-memory-mcp`` server as a subprocess, talks to it with
the official MCP client over stdio (exactly as an agent host does), saves three
memories, recalls them by paraphrase and by identifier, updates one and shows that
only the new version is found. The store is a temporary folder, so the person's real
memory is never touched.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

__all__ = ["main"]

FACTS = [
    "We chose pnpm over npm for the web app because its workspaces keep installs fast.",
    "Deploy the billing service with `make release-billing`; it needs the BLI-3580 migration first.",
    "Prefer small, focused pull requests: one change, one reason.",
]


def _server_command() -> str:
    here = Path(sys.argv[0]).resolve()
    if here.name == "bli-memory-mcp" and here.exists():
        return str(here)
    candidate = Path(sys.executable).parent / "bli-memory-mcp"
    return str(candidate)


def main(argv: list[str]) -> int:
    """Run the demo; prints what it does to stdout and returns 0 on success, 1 otherwise
    (2 for unknown arguments; ``--help`` prints the help and runs nothing)."""
    import argparse

    argparse.ArgumentParser(
        prog="bli-memory-mcp demo",
        description="Save three memories and recall them through the real MCP server, with "
                    "the official MCP client, in a scratch store that is deleted afterwards: "
                    "your own memories are not touched.").parse_args(argv)
    import anyio
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    out = sys.stdout.write

    async def run(data_dir: str) -> bool:
        # In process: a daemon started for a scratch store would outlive it and stand in
        # the way of the person's own (one per user).
        env = {**os.environ, "BLI_MEMORY_DATA_DIR": data_dir, "BLI_MEMORY_CONTAINER_TAG": "demo",
               "BLI_MEMORY_DAEMON": "0"}
        params = StdioServerParameters(command=_server_command(), args=[], env=env)
        async with Client(params, read_timeout_seconds=120) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            out(f"server bli-memory started over stdio; tools: {', '.join(tools)}\n\n")
            ids = []
            for fact in FACTS:
                r = await client.call_tool("save_memory", {"content": fact})
                ids.append(r.structured_content["memory"]["id"])
                out(f"saved   {fact}\n")
            ok = True
            for query, expect in (
                ("which package manager do we use for the frontend, and why?", 0),
                ("BLI-3580", 1),
                ("how large should a pull request be?", 2),
            ):
                r = await client.call_tool("search_memory", {"query": query, "limit": 3})
                results = r.structured_content["results"]
                top = results[0] if results else None
                hit = top is not None and top["id"] == ids[expect]
                ok &= hit
                shown = f"{top['content']}  (similarity {top['similarity']:.2f})" if top else "(silent)"
                out(f"\nsearch  {query}\n  -> {shown}\n")
            new = "Deploy the billing service with `make ship-billing` since BLI-3990."
            await client.call_tool("update_memory", {"id": ids[1], "content": new})
            r = await client.call_tool("search_memory", {"query": "how do we deploy billing?", "limit": 3})
            results = [x["content"] for x in r.structured_content["results"]]
            ok &= bool(results) and results[0] == new and FACTS[1] not in results
            out(f"\nupdate  -> search now finds: {results[0] if results else '(silent)'}\n")
            return ok

    with tempfile.TemporaryDirectory(prefix="bli-memory-demo-") as data_dir:
        ok = anyio.run(run, data_dir)
    verdict = "demo ok: saved, recalled by meaning and by identifier, updated." if ok else "demo FAILED"
    out(f"\n{verdict}\n")
    return 0 if ok else 1
