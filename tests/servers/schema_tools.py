#!/usr/bin/env python3
"""A generic MCP server (PyPI `mcp` 2.x low-level `Server`, stdio) for the tool-calling evaluation
(tests/benches/tool_eval, tests/eval/toolsets.toml): it lists the tools of one schema file and
answers every call by echoing the tool's name and arguments as JSON text. Nothing is done.

The schema file (tests/eval/tools/DOMAIN.json) is a JSON list of MCP tool definitions:
  {"name": ..., "description": ..., "inputSchema": {...JSON Schema...}}

Usage: schema_tools.py SCHEMA.json [--name SERVER_NAME]
"""

import argparse
import json
import sys

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("schema", help="a JSON file: a list of tool definitions")
    p.add_argument("--name", help="the server's name (default: the file's stem)")
    return p.parse_args()


ARGS = parse_args()
with open(ARGS.schema, encoding="utf-8") as f:
    DEFINITIONS = json.load(f)
if not isinstance(DEFINITIONS, list):
    sys.exit(f"{ARGS.schema}: expected a JSON list of tool definitions")

TOOLS = [
    types.Tool(
        name=d["name"],
        description=d.get("description"),
        input_schema=d.get("inputSchema") or {"type": "object", "properties": {}},
    )
    for d in DEFINITIONS
]
NAMES = {t.name for t in TOOLS}


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    if params.name not in NAMES:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"unknown tool {params.name!r}")],
            is_error=True,
        )
    echoed = json.dumps({"tool": params.name, "arguments": params.arguments or {}}, sort_keys=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=echoed)])


def server_name() -> str:
    if ARGS.name:
        return ARGS.name
    stem = ARGS.schema.replace("\\", "/").rsplit("/", 1)[-1]
    return "schema-tools-" + stem.rsplit(".", 1)[0]


server = Server(server_name(), version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
