#!/usr/bin/env python3
"""A real MCP server (PyPI `mcp` 2.x, `MCPServer`) over HTTP, for the remote-server tests.

  --transport sse              the legacy HTTP+SSE transport (GET /sse, POST /messages/)
  --transport streamable-http  streamable HTTP at /mcp
  --issuer URL                 (streamable HTTP) accept only access tokens that URL's OpenID
                               provider issued for this server: each token is checked with the
                               provider's RFC 7662 introspection endpoint, as the client
                               `--introspection-client` / `--introspection-secret`.

Binds 127.0.0.1 on --port (0 picks a free one). When ready it prints one line
`LISTENING http://127.0.0.1:PORT/PATH` and flushes. It exits when stdin closes.
"""

import argparse
import asyncio
import base64
import socket
import sys

import anyio
import httpx2 as httpx
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class IntrospectionVerifier:
    """Checks bearer tokens with the authorization server (RFC 7662)."""

    def __init__(self, endpoint: str, client_id: str, secret: str, resource: str):
        self.endpoint = endpoint
        self.auth = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx.AsyncClient() as client:
            r = await client.post(
                self.endpoint,
                data={"token": token},
                headers={"Authorization": f"Basic {self.auth}"},
            )
        if r.status_code != 200:
            return None
        info = r.json()
        if not info.get("active"):
            return None
        aud = info.get("aud")
        auds = aud if isinstance(aud, list) else [aud]
        if self.resource not in auds:
            return None
        return AccessToken(
            token=token,
            client_id=info.get("client_id", ""),
            scopes=(info.get("scope") or "").split(),
            expires_at=info.get("exp"),
            resource=self.resource,
            subject=info.get("sub"),
        )


def build(args, port: int) -> tuple[MCPServer, str]:
    if args.transport == "sse":
        path = "/sse"
    else:
        path = "/mcp"
    url = f"http://127.0.0.1:{port}{path}"
    kwargs = {}
    if args.issuer:
        issuer = args.issuer.rstrip("/")
        kwargs["auth"] = AuthSettings(
            issuer_url=issuer,
            resource_server_url=url,
            required_scopes=["mcp:tools"],
            validate_token_resource=True,
        )
        kwargs["token_verifier"] = IntrospectionVerifier(
            f"{issuer}/token/introspection",
            args.introspection_client,
            args.introspection_secret,
            url,
        )
    server = MCPServer("rkmcp-http-test-server", **kwargs)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back, unchanged."""
        return text

    return server, url


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--transport", choices=["sse", "streamable-http"], required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--issuer")
    p.add_argument("--introspection-client", default="mcp-resource-server")
    p.add_argument("--introspection-secret", default="resource-server-secret")
    args = p.parse_args()

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)  # connections made before uvicorn runs wait in the backlog
    port = sock.getsockname()[1]
    server, url = build(args, port)
    if args.transport == "sse":
        app = server.sse_app()
    else:
        app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning")
    uv = uvicorn.Server(config)

    async def stop_on_stdin_eof() -> None:
        await anyio.to_thread.run_sync(sys.stdin.read)
        uv.should_exit = True

    print(f"LISTENING {url}", flush=True)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_on_stdin_eof)
        await uv.serve(sockets=[sock])
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    asyncio.run(main())
