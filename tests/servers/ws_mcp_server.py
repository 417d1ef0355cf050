#!/usr/bin/env python3
"""A real MCP server (PyPI `mcp` 2.x) served over WebSocket, for the transport-websocket plugin test.

MCP's WebSocket convention: subprotocol "mcp", one JSON-RPC message per text frame. `mcp` 2.x ships
no WebSocket server transport, so this bridges `websockets` frames to the same memory streams its
stdio transport feeds to the low-level server; everything above the framing is the SDK's own code.

Usage: ws_mcp_server.py [--port N] [--path /mcp]. Binds 127.0.0.1 only. With --port 0 it picks a free
port. When it is ready it prints one line `LISTENING ws://127.0.0.1:PORT/PATH` to stdout and flushes,
so the test knows where to connect. It exits when stdin closes (the test process died or is done).
"""

import argparse
import asyncio
import logging
import sys

import anyio
import mcp_types as types
import websockets
from mcp.server.mcpserver import MCPServer
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

server = MCPServer("ws-test-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back, unchanged."""
    return text


async def serve_connection(ws: websockets.ServerConnection, path: str) -> None:
    if ws.request is None or ws.request.path != path:
        await ws.close(code=1008, reason=f"unknown path, this server serves {path}")
        return
    read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
    write_stream, write_reader = create_context_streams[SessionMessage](0)

    async def ws_reader() -> None:
        async with read_writer:
            async for frame in ws:
                if isinstance(frame, bytes):
                    await read_writer.send(ValueError("binary frame: MCP over WebSocket uses text frames"))
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(frame, by_name=False)
                except Exception as exc:  # the SDK answers a parse error itself
                    await read_writer.send(exc)
                    continue
                await read_writer.send(SessionMessage(message))

    async def ws_writer() -> None:
        async with write_reader:
            async for session_message in write_reader:
                await ws.send(session_message.message.model_dump_json(by_alias=True, exclude_unset=True))

    low = server._lowlevel_server
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ws_reader)
            tg.start_soon(ws_writer)
            await low.run(read_stream, write_stream, low.create_initialization_options())
            tg.cancel_scope.cancel()
    except websockets.ConnectionClosed:
        pass


async def main() -> None:
    # Per-connection INFO lines from websockets would only clutter the test output.
    logging.getLogger("websockets").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--path", default="/mcp")
    args = parser.parse_args()

    async def handler(ws: websockets.ServerConnection) -> None:
        await serve_connection(ws, args.path)

    async with websockets.serve(handler, "127.0.0.1", args.port, subprotocols=["mcp"]) as ws_server:
        port = ws_server.sockets[0].getsockname()[1]
        print(f"LISTENING ws://127.0.0.1:{port}{args.path}", flush=True)
        # Stop with the parent: stdin reaches EOF when the test drops its end of the pipe.
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main())
