#!/usr/bin/env python3
"""A 2025-11-25 MCP server over stdio (PyPI `mcp` 2.x low-level `Server`) that answers
`server/discover` the way servers in the wild do, for rkmcp's `protocol = "auto"` tests.

The SDK itself speaks 2026-07-28; this script answers `server/discover` before the SDK sees it,
so the SDK only ever sees `initialize` and serves the 2025-11-25 lifecycle with one tool,
`echo {text}`.

  --discover MODE   how `server/discover` is answered:
                    empty            {"result": {}} (the conformance suite's 2025 servers)
                    wrong-shape      an initialize-like result (protocolVersion, serverInfo)
                    error:CODE       a JSON-RPC error with that code
                    error-null-id:CODE  the same with `"id": null`
                    silent           never answered
                    exit             the process exits at once (status 1)
  --record FILE     appends the method of the first request each process gets to FILE
"""

import argparse
import json
import os
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--discover", required=True)
    p.add_argument("--record")
    return p.parse_args()


ARGS = parse_args()


async def list_tools(ctx, params):
    return types.ListToolsResult(
        tools=[
            types.Tool(
                name="echo",
                description="Echoes the text back.",
                input_schema={
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
            )
        ]
    )


async def call_tool(ctx, params):
    text = (params.arguments or {}).get("text", "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"echo: {text}")])


server = Server("legacy-stdio-test", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


class Lines:
    """stdin for the SDK, minus `server/discover`, which is answered here as --discover says."""

    def __init__(self, stdin, stdout):
        self.stdin = stdin
        self.stdout = stdout
        self.first = True

    def __aiter__(self):
        return self

    async def __anext__(self):
        while True:
            line = await self.stdin.readline()
            if not line:
                raise StopAsyncIteration
            try:
                message = json.loads(line)
            except ValueError:
                return line
            method = message.get("method") if isinstance(message, dict) else None
            if self.first and method:
                self.first = False
                if ARGS.record:
                    with open(ARGS.record, "a") as f:
                        f.write(method + "\n")
            if method != "server/discover":
                return line
            await self.answer_discover(message.get("id"))

    async def send(self, obj):
        await self.stdout.write(json.dumps(obj) + "\n")
        await self.stdout.flush()

    async def answer_discover(self, request_id):
        mode = ARGS.discover
        if mode == "empty":
            await self.send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif mode == "wrong-shape":
            await self.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "serverInfo": {"name": "legacy-stdio-test", "version": "1.0"},
                    },
                }
            )
        elif mode.startswith("error:") or mode.startswith("error-null-id:"):
            kind, code = mode.split(":", 1)
            await self.send(
                {
                    "jsonrpc": "2.0",
                    "id": None if kind == "error-null-id" else request_id,
                    "error": {"code": int(code), "message": f"no such method (test code {code})"},
                }
            )
        elif mode == "silent":
            pass
        elif mode == "exit":
            print("unknown first message: exiting", file=sys.stderr, flush=True)
            os._exit(1)
        else:
            raise SystemExit(f"unknown --discover mode {mode}")


async def main():
    stdin = anyio.wrap_file(sys.stdin)
    stdout = anyio.wrap_file(sys.stdout)
    async with stdio_server(stdin=Lines(stdin, stdout), stdout=stdout) as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
