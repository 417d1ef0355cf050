#!/usr/bin/env python3
"""A 2026-07-28 MCP server (PyPI `mcp` 2.x, MCPServer over stdio) whose resource changes reach
clients through `subscriptions/listen` (SEP-2575: no `resources/subscribe` on that version), for
rkmcp's tests of resource subscriptions (tests/integration/subscriptions.rs).

- Resource `counter://value`: the counter, as text.
- Tool `bump()`: adds one to the counter and publishes a resource-updated event.
- `--tick SECONDS`: also bump every SECONDS in the background (for `rkmcp resources watch`,
  which calls no tool).

Usage: subscriptions_server.py [--tick SECONDS]
"""

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.subscriptions import ResourceUpdated

URI = "counter://value"
counter = 0

server = MCPServer("rkmcp-subscriptions-test")


@server.resource(URI)
def value() -> str:
    """The counter."""
    return str(counter)


@server.tool()
async def bump(ctx: Context) -> str:
    """Adds one to the counter; subscribers hear about it."""
    global counter
    counter += 1
    await ctx.notify_resource_updated(URI)
    return str(counter)


async def ticking(seconds: float) -> None:
    global counter
    while True:
        await anyio.sleep(seconds)
        counter += 1
        await server._subscriptions.publish(ResourceUpdated(uri=URI))


async def main() -> None:
    async with anyio.create_task_group() as tg:
        if "--tick" in sys.argv:
            tg.start_soon(ticking, float(sys.argv[sys.argv.index("--tick") + 1]))
        await server.run_stdio_async()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
