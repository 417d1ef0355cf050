#!/usr/bin/env python3
"""A hostile MCP server (stdio, standard library only) for rkmcp's hardening tests.

It speaks just enough MCP by hand (initialize, tools/list, tools/call) to answer the way a broken
or malicious server would, byte for byte — no SDK would let it:

tools (tools/call NAME):
- echo {message}        answers normally (and writes a line to stderr first)
- bad_json              answers with a malformed JSON line carrying the request's id
- bad_utf8              answers with a line that is not UTF-8
- huge {mb}             answers with a single line of `mb` megabytes, the id written LAST (as the
                        TypeScript SDK orders it)
- flood {count}         sends `count` log notifications as fast as it can, then answers
- stderr_burst {lines}  writes `lines` lines to stderr, then `burst done`, then answers
- sleep {seconds}       answers after `seconds`

options:
- --bad-schemas         tools/list also lists a tool whose inputSchema is a string and one
                        without inputSchema
- --binary-stderr       writes a line that is not UTF-8 to stderr at start
- --linger              keeps running after stdin closes (as servers that never read stdin
                        again do); only a signal ends it
- --pid-file FILE       writes its pid to FILE at start
"""

import json
import os
import sys
import time

args = sys.argv[1:]
out = sys.stdout.buffer


def opt(name):
    return name in args


def value(name):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
    return None


def send(obj):
    out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    out.flush()


def raw(line):
    out.write(line + b"\n")
    out.flush()


def result(id_, text):
    send({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}})


SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}}
TOOLS = [
    {"name": n, "description": n, "inputSchema": SCHEMA}
    for n in ["echo", "bad_json", "bad_utf8", "huge", "flood", "stderr_burst", "sleep"]
]
if opt("--bad-schemas"):
    TOOLS.insert(1, {"name": "stringy", "description": "schema is a string",
                     "inputSchema": json.dumps(SCHEMA)})
    TOOLS.insert(2, {"name": "schemaless", "description": "no schema"})


def call(id_, name, arguments):
    if name == "echo":
        sys.stderr.write("echo called\n")
        sys.stderr.flush()
        result(id_, arguments.get("message", ""))
    elif name == "bad_json":
        raw(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"x"}],,}'
            % json.dumps(id_).encode())
    elif name == "bad_utf8":
        raw(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"\xff\xfe\x1b[2J"}]}}'
            % json.dumps(id_).encode())
    elif name == "huge":
        size = int(float(arguments.get("mb", 20)) * 1024 * 1024)
        out.write(b'{"result":{"content":[{"type":"text","text":"')
        chunk = b"x" * 65536
        written = 0
        while written < size:
            out.write(chunk)
            written += len(chunk)
        out.write(b'"}]},"jsonrpc":"2.0","id":%s}\n' % json.dumps(id_).encode())
        out.flush()
    elif name == "flood":
        count = int(arguments.get("count", 100000))
        line = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "logger": "flood",
                                      "data": "a log line from a flooding server " + "z" * 200}},
                          separators=(",", ":")).encode() + b"\n"
        batch = line * 1000
        for _ in range(count // 1000):
            out.write(batch)
        out.flush()
        result(id_, "flooded")
    elif name == "stderr_burst":
        lines = int(arguments.get("lines", 10000))
        for i in range(lines):
            sys.stderr.write("burst line %d %s\n" % (i, "y" * 100))
        sys.stderr.write("burst done\n")
        sys.stderr.flush()
        result(id_, "burst written")
    elif name == "sleep":
        time.sleep(float(arguments.get("seconds", 3600)))
        result(id_, "slept")
    else:
        send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32602, "message": "unknown tool " + name}})


def main():
    pid_file = value("--pid-file")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
    if opt("--binary-stderr"):
        sys.stderr.buffer.write(b"binary \xff\xfe\xfd stderr line\n")
        sys.stderr.flush()
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, id_ = msg.get("method"), msg.get("id")
        if id_ is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": id_, "result": {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "hostile", "version": "0.1.0"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": id_, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            params = msg.get("params", {})
            call(id_, params.get("name"), params.get("arguments") or {})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": id_, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no " + method}})
    if opt("--linger"):
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
