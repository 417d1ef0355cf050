#!/usr/bin/env python3
"""A 2025-11-25 streamable HTTP MCP server (standard library only) that answers
`server/discover` the way servers in the wild do, for rkmcp's `protocol = "auto"` tests.

No SDK would answer the probe this badly, so the little MCP it needs is written by hand:
`initialize` (with an `Mcp-Session-Id`), `notifications/initialized`, `ping`, `tools/list` and
`tools/call` of one tool, `echo {text}`. Every answer is one JSON body; GET (the SSE stream) is
refused with 405, as a server without server-initiated messages may.

The URL path chooses how `server/discover` is answered: http://127.0.0.1:PORT/MODE/mcp with MODE
  empty          HTTP 200, {"result": {}} (the conformance suite's 2025 servers)
  wrong-shape    HTTP 200, an initialize-like result
  error-CODE     HTTP 200, a JSON-RPC error with that code (e.g. error--32601)
  http-STATUS    that HTTP status with a short text body (400, 404, 405, 500, ...)
  html           HTTP 200, an HTML page
  not-json       HTTP 200, Content-Type application/json, a body that is not JSON
  close          the connection is closed without an answer
  silent         never answered (the connection is held open)

Prints `LISTENING http://127.0.0.1:PORT` when ready; logs `MODE METHOD` for every request to
stderr; exits when stdin closes.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL = {
    "name": "echo",
    "description": "Echoes the text back.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def mode(self):
        parts = self.path.strip("/").split("/")
        return parts[0] if len(parts) == 2 and parts[1] == "mcp" else None

    def reply(self, status, body, content_type="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def result(self, request_id, result, headers=()):
        self.reply(200, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}), headers=headers)

    def do_GET(self):
        self.reply(405, "no server-initiated stream here", "text/plain")

    def do_DELETE(self):
        self.reply(200, "", "text/plain")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        mode = self.mode()
        if mode is None:
            self.reply(404, "not an MCP endpoint", "text/plain")
            return
        try:
            message = json.loads(body)
        except ValueError:
            self.reply(400, "not JSON", "text/plain")
            return
        method = message.get("method")
        request_id = message.get("id")
        print(f"{mode} {method}", file=sys.stderr, flush=True)
        if method == "server/discover":
            self.answer_discover(mode, request_id)
        elif method == "initialize":
            self.result(
                request_id,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "legacy-http-test", "version": "1.0"},
                },
                headers=[("Mcp-Session-Id", f"session-{mode}")],
            )
        elif request_id is None:
            # Notifications (initialized, cancelled) are accepted.
            self.reply(202, "", "text/plain")
        elif method == "ping":
            self.result(request_id, {})
        elif method == "tools/list":
            self.result(request_id, {"tools": [TOOL]})
        elif method == "tools/call":
            text = (message.get("params") or {}).get("arguments", {}).get("text", "")
            self.result(request_id, {"content": [{"type": "text", "text": f"echo: {text}"}]})
        else:
            self.reply(
                200,
                json.dumps(
                    {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
                ),
            )

    def answer_discover(self, mode, request_id):
        if mode == "empty":
            self.result(request_id, {})
        elif mode == "wrong-shape":
            self.result(request_id, {"protocolVersion": "2025-11-25", "serverInfo": {"name": "x", "version": "1"}})
        elif mode.startswith("error-"):
            code = int(mode[len("error-") :])
            self.reply(
                200,
                json.dumps(
                    {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": f"test error {code}"}}
                ),
            )
        elif mode.startswith("http-"):
            status = int(mode[len("http-") :])
            self.reply(status, f"refused with {status}", "text/plain")
        elif mode == "html":
            self.reply(200, "<!doctype html><html><body><h1>Welcome</h1></body></html>", "text/html")
        elif mode == "not-json":
            self.reply(200, "this is { not json", "application/json")
        elif mode == "close":
            self.close_connection = True
            self.connection.shutdown(2)
        elif mode == "silent":
            time.sleep(3600)
        else:
            self.reply(500, f"unknown mode {mode}", "text/plain")


def main():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    print(f"LISTENING http://127.0.0.1:{port}", flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
