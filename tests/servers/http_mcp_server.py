#!/usr/bin/env python3
"""A real MCP server (PyPI `mcp` 2.x, `MCPServer`) over HTTP, for the remote-server tests.

  --transport sse              the legacy HTTP+SSE transport (GET /sse, POST /messages/)
  --transport streamable-http  streamable HTTP at /mcp
  --issuer URL                 (streamable HTTP) accept only access tokens that URL's OpenID
                               provider issued for this server: each token is checked with the
                               provider's RFC 7662 introspection endpoint, as the client
                               `--introspection-client` / `--introspection-secret`.
  --admin-scope SCOPE          (with --issuer) add a tool `admin_stats` that only tokens with
                               SCOPE may call; other tokens get 403 `insufficient_scope` naming
                               the scopes needed, as a server with per-tool permissions answers.

Binds 127.0.0.1 on --port (0 picks a free one). When ready it prints one line
`LISTENING http://127.0.0.1:PORT/PATH` and flushes. It exits when stdin closes.
"""

import argparse
import asyncio
import base64
import json
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


class RequireScopeForTool:
    """ASGI middleware: a `tools/call` of `tool` by a token without `scope` is refused with
    403 and an RFC 6750 `insufficient_scope` challenge (RFC 9728 `resource_metadata` included)."""

    def __init__(self, app, verifier, tool, scope, base_scopes, resource_metadata):
        self.app = app
        self.verifier = verifier
        self.tool = tool
        self.scope = scope
        self.base_scopes = base_scopes
        self.resource_metadata = resource_metadata

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if (
            isinstance(request, dict)
            and request.get("method") == "tools/call"
            and (request.get("params") or {}).get("name") == self.tool
        ):
            header = dict(scope["headers"]).get(b"authorization", b"").decode()
            token = header[7:] if header.lower().startswith("bearer ") else ""
            info = await self.verifier.verify_token(token) if token else None
            if info is not None and self.scope not in info.scopes:
                needed = " ".join(self.base_scopes + [self.scope])
                challenge = (
                    f'Bearer error="insufficient_scope", '
                    f'error_description="{self.tool} needs the {self.scope} scope", '
                    f'scope="{needed}", resource_metadata="{self.resource_metadata}"'
                )
                await send(
                    {
                        "type": "http.response.start",
                        "status": 403,
                        "headers": [
                            (b"www-authenticate", challenge.encode()),
                            (b"content-type", b"application/json"),
                        ],
                    }
                )
                await send(
                    {
                        "type": "http.response.body",
                        "body": b'{"error":"insufficient_scope"}',
                    }
                )
                return
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


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

    if args.issuer and args.admin_scope:

        @server.tool()
        def admin_stats() -> str:
            """Server statistics (needs the admin scope)."""
            return "calls served: 42"

    return server, url


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--transport", choices=["sse", "streamable-http"], required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--issuer")
    p.add_argument("--introspection-client", default="mcp-resource-server")
    p.add_argument("--introspection-secret", default="resource-server-secret")
    p.add_argument("--admin-scope")
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
        if args.issuer and args.admin_scope:
            issuer = args.issuer.rstrip("/")
            verifier = IntrospectionVerifier(
                f"{issuer}/token/introspection",
                args.introspection_client,
                args.introspection_secret,
                url,
            )
            app = RequireScopeForTool(
                app,
                verifier,
                "admin_stats",
                args.admin_scope,
                ["mcp:tools"],
                f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp",
            )
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
