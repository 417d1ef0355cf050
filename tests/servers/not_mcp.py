"""An HTTP server that is not an MCP server, for the tests of what rkmcp tells the user.

    not_mcp.py html PORT        every request gets a 200 HTML page (a proxy's or a captive
                                portal's page where the MCP endpoint should be)
    not_mcp.py sign-in PORT     every request gets 401 with a Bearer challenge (a server that
                                needs a sign-in rkmcp does not have)
"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]
PORT = int(sys.argv[2])


class Handler(BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if MODE == "html":
            body = b"<!doctype html><html><body><h1>Please sign in to the Wi-Fi</h1></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
        else:
            body = b'{"error":"unauthorized"}'
            self.send_response(401)
            self.send_header(
                "WWW-Authenticate",
                f'Bearer resource_metadata="http://127.0.0.1:{PORT}/.well-known/oauth-protected-resource", scope="mcp"',
            )
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = answer

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
