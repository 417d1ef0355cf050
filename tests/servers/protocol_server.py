"""A test server for rkmcp's protocol tests, on PyPI `mcp` 2.x (MCPServer), over stdio.

It speaks 2026-07-28 (`server/discover`, stateless, multi-round tool calls) as well as the older
versions with `initialize`, so the same tools exercise both lifecycles:

- `greet` needs the user's name: its resolver elicits it. On 2026-07-28 the call first returns
  `resultType: "input_required"` and rkmcp retries with `inputResponses` and the `requestState`;
  on 2025-11-25 the server sends `elicitation/create` in the middle of the call.
- `show_roots` asks for the client's roots (`roots/list`, or an input request on 2026-07-28).
- `tools_list_calls` says how often `tools/list` was answered; with `--ttl-ms N` every
  `tools/list` result carries `ttlMs: N`, and a client honouring it lists again when it expires.
- `chatter` logs "chatter at LEVEL" at debug, info, warning and error during the call (on
  2026-07-28 the SDK sends only the levels the request's `_meta` log level allows).

Usage: python protocol_server.py [--ttl-ms N]
"""

import sys
from typing import Annotated

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve
from mcp_types import ListRootsResult
from pydantic import BaseModel


def ttl_ms() -> int | None:
    if "--ttl-ms" in sys.argv:
        return int(sys.argv[sys.argv.index("--ttl-ms") + 1])
    return None


class Name(BaseModel):
    name: str = "Ada"


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def client_roots() -> ListRoots:
    return ListRoots()


class CountingServer(MCPServer):
    list_calls = 0

    async def list_tools(self):
        CountingServer.list_calls += 1
        return await super().list_tools()


ttl = ttl_ms()
server = CountingServer(
    "rkmcp-protocol-test",
    cache_hints={"tools/list": CacheHint(ttl_ms=ttl)} if ttl is not None else None,
)


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets the user by the name they give."""
    return f"Hello, {who.name}!"


@server.tool()
def show_roots(roots: Annotated[ListRootsResult, Resolve(client_roots)]) -> str:
    """Lists the client's roots."""
    return " ".join(str(root.uri) for root in roots.roots) or "(no roots)"


@server.tool()
def tools_list_calls() -> str:
    """How many times tools/list was answered."""
    return str(CountingServer.list_calls)


@server.tool()
async def chatter(ctx: Context) -> str:
    """Logs one message at each of four levels, then answers."""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, f"chatter at {level}")
    return "said four things"


if __name__ == "__main__":
    server.run("stdio")
