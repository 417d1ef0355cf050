"""transport-tcp-python: an rkmcp transport written in Python (componentize-py).

MCP's JSON-RPC messages travel as newline-delimited JSON over plain TCP: each message is one line
of UTF-8 JSON ending in "\\n", the framing of MCP's stdio transport, so a stdio server behind a
TCP bridge (`socat TCP-LISTEN:8765,fork EXEC:mcp-server-time`) works unchanged.

    [plugins.grants.transport-tcp-python]
    network = ["127.0.0.1:8765"]
    config = { url = "tcp://127.0.0.1:8765" }

Config: `url` (tcp://HOST:PORT, required), `connect_timeout_ms` and `send_timeout_ms` (default
4000, below the host's 5 s default deadline for a transport call, so the plugin reports a clear
error instead of being cut off), `max_message_bytes` (default 4 MiB: a longer line is refused).
There is no TLS. Python's `socket` module maps onto wasi:sockets, which the host filters by the
grant: the plugin reaches the granted `host:port` only, and a host name (not an IP address) also
needs name lookup, which the host allows only when the grant names that host.
"""

import ipaddress
import socket
import time

from wit_world import exports
from wit_world.exports import transport as wit
from wit_world.imports import host, types
from componentize_py_types import Err

NAME = "transport-tcp-python"
DEFAULT_CONNECT_TIMEOUT_MS = 4000
DEFAULT_SEND_TIMEOUT_MS = 4000
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
READ_SIZE = 64 * 1024


def _config_error(message):
    return Err(wit.TransportError_Config(message))


def _io_error(message):
    return Err(wit.TransportError_Io(message))


def _protocol_error(message):
    return Err(wit.TransportError_Protocol(message))


def _positive_int(config, key, default):
    raw = config.get(key)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise _config_error(f"`{key}` must be a whole number, got `{raw}`")
    if value <= 0:
        raise _config_error(f"`{key}` must be above 0, got `{raw}`")
    return value


def parse_url(url):
    """`tcp://HOST:PORT` -> (host, port); IPv6 addresses in brackets: `tcp://[::1]:8765`."""

    def bad(why):
        return _config_error(f"`url` = `{url}`: {why}")

    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "tcp":
        raise bad("must start with tcp:// (this plugin speaks newline-delimited JSON over plain TCP)")
    authority = rest[:-1] if rest.endswith("/") else rest
    if any(c in authority for c in "/?#@"):
        raise bad("only tcp://HOST:PORT is accepted (no path, query or user info)")
    if authority.startswith("["):
        host_part, close, tail = authority[1:].partition("]")
        if not close:
            raise bad("unclosed `[` in the host")
        if not tail.startswith(":"):
            raise bad("no port (write tcp://[ADDRESS]:PORT)")
        port_text = tail[1:]
    else:
        host_part, colon, port_text = authority.rpartition(":")
        if not colon:
            raise bad("no port (write tcp://HOST:PORT)")
    if not host_part:
        raise bad("no host")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise bad(f"`{port_text}` is not a port number (1-65535)")
    return host_part, int(port_text)


def _addresses(url, host_name, port):
    """The socket addresses to try. An IP address is used as it is; a host name is looked up
    (passed as ASCII bytes: a `str` would go through the idna codec, which the component lacks)."""
    try:
        ip = ipaddress.ip_address(host_name)
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        return [(family, (str(ip), port))]
    except ValueError:
        pass
    try:
        name = host_name.encode("ascii")
    except UnicodeEncodeError:
        raise _config_error(f"`url` = `{url}`: write a non-ASCII host name in its xn-- (punycode) form")
    try:
        infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise _io_error(
            f"cannot resolve `{host_name}` from `{url}`: {e} (name lookup is allowed only when "
            f"this plugin's network grant names that host; an IP address needs none)"
        )
    return [(family, addr) for family, _, _, _, addr in infos]


class Transport(exports.Transport):
    def connect(self, config):
        config = dict(config)
        url = (config.get("url") or "").strip()
        if not url:
            raise _config_error(
                f"`url` is not set: add `config = {{ url = \"tcp://HOST:PORT\" }}` to [plugins.grants.{NAME}]"
            )
        host_name, port = parse_url(url)
        connect_ms = _positive_int(config, "connect_timeout_ms", DEFAULT_CONNECT_TIMEOUT_MS)
        send_ms = _positive_int(config, "send_timeout_ms", DEFAULT_SEND_TIMEOUT_MS)
        max_bytes = _positive_int(config, "max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)
        deadline = time.monotonic() + connect_ms / 1000
        errors = []
        for family, addr in _addresses(url, host_name, port):
            left = deadline - time.monotonic()
            if left <= 0:
                errors.append(f"no time left of connect_timeout_ms = {connect_ms}")
                break
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(left)
                sock.connect(addr)
            except OSError as e:
                sock.close()
                errors.append(f"{addr[0]}:{addr[1]}: {str(e) or type(e).__name__}")
                continue
            host.log(types.LogLevel.DEBUG, "connected", [("url", url)])
            return Connection(sock, url, send_ms / 1000, max_bytes)
        raise _io_error(
            f"cannot connect to {host_name}:{port} for `{url}`: {'; '.join(errors) or 'no address'} "
            f"(is {host_name}:{port} in this plugin's network grant?)"
        )


class Connection(wit.Connection):
    """One TCP connection. Bytes read past the end of a message wait in `_buf` for the next
    `receive`, and so does the start of a message cut off by a timeout: a message may arrive in
    any number of pieces, and several may come in one."""

    def __init__(self, sock, url, send_timeout, max_bytes):
        self._sock = sock
        self._url = url
        self._send_timeout = send_timeout
        self._max = max_bytes
        self._buf = bytearray()
        self._eof = False
        self._closed = False

    def _check_open(self):
        if self._closed:
            raise Err(wit.TransportError_Closed())

    def _fail(self, error):
        # Framing is lost after a bad line: nothing later on this connection can be trusted.
        self._shutdown()
        return error

    def send(self, message):
        self._check_open()
        # Raw CR and LF can only be whitespace between JSON tokens (inside strings they must be
        # escaped), so replacing them keeps the message and makes it one line.
        data = message.strip().replace("\r", " ").replace("\n", " ").encode("utf-8") + b"\n"
        if len(data) > self._max:
            raise _protocol_error(
                f"{self._url}: a message of {len(data)} bytes is over max_message_bytes = {self._max}"
            )
        try:
            self._sock.settimeout(self._send_timeout)
            self._sock.sendall(data)
        except TimeoutError:
            raise self._fail(
                _io_error(f"{self._url}: the server took no data for {int(self._send_timeout * 1000)} ms (send_timeout_ms)")
            )
        except (BrokenPipeError, ConnectionResetError):
            self._shutdown()
            raise Err(wit.TransportError_Closed())
        except OSError as e:
            raise self._fail(_io_error(f"{self._url}: send failed: {e}"))

    def _take_line(self):
        """The next complete, non-blank line from the buffer, or None."""
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                if len(self._buf) > self._max:
                    raise self._fail(
                        _protocol_error(
                            f"{self._url}: the server sent more than max_message_bytes = {self._max} "
                            f"without a newline (one message per line)"
                        )
                    )
                return None
            raw = bytes(self._buf[:end])
            del self._buf[: end + 1]
            if len(raw) > self._max:
                raise self._fail(
                    _protocol_error(
                        f"{self._url}: a message of {len(raw)} bytes is over max_message_bytes = {self._max}"
                    )
                )
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as e:
                raise self._fail(_protocol_error(f"{self._url}: the server sent a line that is not UTF-8: {e}"))
            # Blank lines (and the CR of CRLF) between messages are not messages.
            if line:
                return line

    def receive(self, timeout_ms):
        self._check_open()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            line = self._take_line()
            if line is not None:
                return line
            if self._eof:
                if self._buf.strip():
                    raise self._fail(
                        _protocol_error(
                            f"{self._url}: the server closed the connection in the middle of a message "
                            f"({len(self._buf)} bytes without a newline)"
                        )
                    )
                self._shutdown()
                raise Err(wit.TransportError_Closed())
            # At least one read, even with no time left: a zero timeout still collects what came.
            left = max(deadline - time.monotonic(), 0.001)
            try:
                self._sock.settimeout(left)
                chunk = self._sock.recv(READ_SIZE)
            except (TimeoutError, BlockingIOError):
                chunk = None
            except (ConnectionResetError, BrokenPipeError):
                chunk = b""
            except OSError as e:
                raise self._fail(_io_error(f"{self._url}: read failed: {e}"))
            if chunk == b"":
                self._eof = True
            elif chunk:
                self._buf += chunk
            elif time.monotonic() >= deadline:
                return None

    def _shutdown(self):
        if self._closed:
            return
        self._closed = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # the peer may already be gone; closing is done either way
        self._sock.close()

    def close(self):
        self._check_open()
        self._shutdown()
