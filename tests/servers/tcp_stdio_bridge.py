#!/usr/bin/env python3
"""A TCP <-> stdio bridge (Python stdlib only), the peer of the transport-tcp-python plugin test:
for each TCP connection it starts a real stdio MCP server and pipes bytes both ways. MCP's stdio
framing is one JSON-RPC message per line, the framing the plugin speaks over TCP, so the server's
lines pass unchanged.

Usage: tcp_stdio_bridge.py -- COMMAND [ARGS…]
Binds 127.0.0.1 on a free port and prints `LISTENING PORT` to stdout (flushed) once it accepts.
It exits when its stdin closes (the test process died or is done). A connection ends when either
side closes: the server's stdin is closed (a stdio server exits on that) and it is killed if it
is still there a moment later.
"""

import os
import socket
import subprocess
import sys
import threading


def pipe_socket_to_child(conn, child):
    try:
        while True:
            data = conn.recv(65536)
            if not data:
                break
            child.stdin.write(data)
            child.stdin.flush()
    except OSError:
        pass
    try:
        child.stdin.close()
    except OSError:
        pass


def pipe_child_to_socket(conn, child):
    try:
        while True:
            data = child.stdout.read1(65536)
            if not data:
                break
            conn.sendall(data)
    except OSError:
        pass
    try:
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve(conn, command):
    with conn:
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        up = threading.Thread(target=pipe_socket_to_child, args=(conn, child), daemon=True)
        down = threading.Thread(target=pipe_child_to_socket, args=(conn, child), daemon=True)
        up.start()
        down.start()
        up.join()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        down.join(timeout=5)


def exit_when_stdin_closes():
    sys.stdin.buffer.read()
    os._exit(0)


def main():
    if "--" not in sys.argv or sys.argv.index("--") == len(sys.argv) - 1:
        sys.exit("usage: tcp_stdio_bridge.py -- COMMAND [ARGS…]")
    command = sys.argv[sys.argv.index("--") + 1 :]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    threading.Thread(target=exit_when_stdin_closes, daemon=True).start()
    print(f"LISTENING {listener.getsockname()[1]}", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, command), daemon=True).start()


if __name__ == "__main__":
    main()
