#!/usr/bin/env python3
"""An MCP server (PyPI `mcp` 2.x, stdio) that misbehaves on purpose, for rkmcp's health and
restart tests (tests/integration/health.rs) and the crash-recovery benchmark.

Tools:
- echo(text): returns the text. After CRASH_AFTER calls (environment, default: never) the process
  exits abruptly (os._exit) in the middle of the next call, as a crashing server would.
- crash(): exits at once, mid-call.
- block(seconds): blocks the whole process (time.sleep, not asyncio.sleep), so every other request
  — pings included — waits: a slow, "degraded" server.
- hang(): blocks forever: an unhealthy server that no longer answers.

Usage: flaky.py (speaks MCP over stdin/stdout).
"""

import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("flaky")
CRASH_AFTER = int(os.environ.get("CRASH_AFTER", "0"))
calls = 0


@server.tool()
def echo(text: str) -> str:
    """Returns the text."""
    global calls
    calls += 1
    if CRASH_AFTER and calls > CRASH_AFTER:
        os._exit(3)
    return text


@server.tool()
def crash() -> str:
    """Exits the server process at once."""
    os._exit(3)


# `async def` with a blocking sleep: the event loop itself stops (a plain `def` tool would run on a
# worker thread and leave the server responsive).
@server.tool()
async def block(seconds: float) -> str:
    """Blocks the whole server for this many seconds."""
    time.sleep(seconds)
    return f"blocked {seconds}s"


@server.tool()
async def hang() -> str:
    """Blocks the whole server forever."""
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    server.run()
