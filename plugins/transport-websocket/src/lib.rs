//! MCP over WebSocket as an rkmcp transport plugin.
//!
//! MCP's WebSocket convention: the client asks for subprotocol `mcp`, and every JSON-RPC message
//! is one text frame. The plugin reads `url = "ws://HOST:PORT/PATH"` from its config and connects
//! through `std::net::TcpStream`, i.e. wasi:sockets, which the host filters by the user's grant:
//! `[plugins.grants.transport-websocket] network = ["HOST:PORT"]`. `wss://` is refused: there is
//! no TLS stack in here.

use std::io::ErrorKind;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use rkmcp_plugin_sdk::{Config, Connection, LogLevel, Transport, TransportError};
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

/// How long the TCP connect plus the HTTP upgrade may take unless `connect_timeout_ms` says
/// otherwise; below the host's default 5 s deadline for a transport call, so the plugin reports
/// a clear error instead of being cut off.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(4000);

struct WebSocketTransport;

struct WsConnection {
    ws: WebSocket<TcpStream>,
    url: String,
}

impl Transport for WebSocketTransport {
    type Connection = WsConnection;

    fn new() -> Self {
        WebSocketTransport
    }

    fn connect(&mut self, config: &Config) -> Result<WsConnection, TransportError> {
        let url = config.require("url")?.trim().to_string();
        let timeout = match config.get("connect_timeout_ms") {
            None => DEFAULT_CONNECT_TIMEOUT,
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|e| {
                    TransportError::Config(format!(
                        "`connect_timeout_ms` must be a number of milliseconds, got `{v}`: {e}"
                    ))
                })?,
        };
        let (host, port) = host_port(&url)?;
        let deadline = Instant::now() + timeout;

        let addrs: Vec<_> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| {
                TransportError::Io(format!(
                    "cannot resolve `{host}` from `{url}`: {e} (an IP address needs no name lookup)"
                ))
            })?
            .collect();
        let mut last_err = None;
        let mut stream = None;
        for addr in addrs {
            match TcpStream::connect(addr) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last_err = Some(format!("{addr}: {e}")),
            }
        }
        let stream = stream.ok_or_else(|| {
            TransportError::Io(format!(
                "cannot connect to {host}:{port} for `{url}`: {} (is {host}:{port} in this plugin's network grant?)",
                last_err.unwrap_or_else(|| "no address".into())
            ))
        })?;
        stream.set_nodelay(true).ok();
        set_read_timeout(&stream, deadline.saturating_duration_since(Instant::now()))?;

        let mut request = url.as_str().into_client_request().map_err(|e| {
            TransportError::Config(format!("`url` = `{url}` is not a WebSocket URL: {e}"))
        })?;
        request
            .headers_mut()
            .insert("Sec-WebSocket-Protocol", HeaderValue::from_static("mcp"));
        let (ws, _response) =
            tungstenite::client::client(request, stream).map_err(|e| match e {
                HandshakeError::Interrupted(_) => TransportError::Io(format!(
                    "WebSocket handshake with `{url}` timed out after {} ms",
                    timeout.as_millis()
                )),
                HandshakeError::Failure(e) => TransportError::Protocol(format!(
                    "WebSocket handshake with `{url}` failed: {e}"
                )),
            })?;
        rkmcp_plugin_sdk::log_fields(LogLevel::Debug, "connected", &[("url", &url)]);
        Ok(WsConnection { ws, url })
    }
}

/// `ws://host:port/path` → (host, port); the scheme's default port when none is given.
fn host_port(url: &str) -> Result<(String, u16), TransportError> {
    let bad = |why: &str| TransportError::Config(format!("`url` = `{url}`: {why}"));
    let rest = match url.split_once("://") {
        Some(("ws", rest)) => rest,
        Some(("wss", _)) => {
            return Err(bad(
                "wss:// is not supported (this plugin has no TLS); use ws://",
            ));
        }
        _ => return Err(bad("must start with ws://")),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Err(bad("user info in the URL is not supported"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6
            .split_once(']')
            .ok_or_else(|| bad("unclosed `[` in the host"))?;
        (h.to_string(), tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = match port {
        None => 80,
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| bad(&format!("`{p}` is not a port number")))?,
    };
    Ok((host, port))
}

/// `None` would block forever, and a zero timeout is an error for std: poll for 1 ms instead.
fn set_read_timeout(stream: &TcpStream, t: Duration) -> Result<(), TransportError> {
    stream
        .set_read_timeout(Some(t.max(Duration::from_millis(1))))
        .map_err(|e| TransportError::Io(format!("cannot set a read timeout: {e}")))
}

fn map_ws_error(url: &str, e: tungstenite::Error) -> TransportError {
    use tungstenite::Error as E;
    match e {
        E::ConnectionClosed | E::AlreadyClosed => TransportError::Closed,
        E::Io(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof
            ) =>
        {
            TransportError::Closed
        }
        E::Io(e) => TransportError::Io(format!("{url}: {e}")),
        E::Utf8(e) => TransportError::Protocol(format!("{url}: a text frame is not UTF-8: {e}")),
        other => TransportError::Protocol(format!("{url}: {other}")),
    }
}

impl Connection for WsConnection {
    fn send(&mut self, message: &str) -> Result<(), TransportError> {
        self.ws
            .send(Message::text(message))
            .map_err(|e| map_ws_error(&self.url, e))
    }

    fn receive(&mut self, timeout: Duration) -> Result<Option<String>, TransportError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            set_read_timeout(self.ws.get_ref(), left)?;
            match self.ws.read() {
                Ok(Message::Text(text)) => return Ok(Some(text.as_str().to_string())),
                Ok(Message::Binary(_)) => {
                    return Err(TransportError::Protocol(format!(
                        "{}: got a binary frame; MCP over WebSocket sends each message as a text frame",
                        self.url
                    )));
                }
                // tungstenite answers pings itself (on this or the next read or write).
                Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => {}
                Ok(Message::Close(_)) => return Err(TransportError::Closed),
                // A read timeout: tungstenite keeps any partial frame buffered for the next call.
                Err(tungstenite::Error::Io(e))
                    if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(map_ws_error(&self.url, e)),
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    fn close(&mut self) -> Result<(), TransportError> {
        // Best effort: send our close frame and give the server a moment to answer; the TCP
        // stream is dropped with the connection either way.
        match self.ws.close(None) {
            Ok(())
            | Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed) => {}
            Err(e) => return Err(map_ws_error(&self.url, e)),
        }
        let _ = set_read_timeout(self.ws.get_ref(), Duration::from_millis(200));
        while self.ws.read().is_ok() {}
        Ok(())
    }
}

rkmcp_plugin_sdk::export_transport!(WebSocketTransport);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ws_urls() {
        assert_eq!(
            host_port("ws://127.0.0.1:8765/mcp"),
            Ok(("127.0.0.1".into(), 8765))
        );
        assert_eq!(
            host_port("ws://localhost/mcp"),
            Ok(("localhost".into(), 80))
        );
        assert_eq!(host_port("ws://[::1]:9000"), Ok(("::1".into(), 9000)));
        for (url, needle) in [
            ("wss://h:1/", "no TLS"),
            ("http://h:1/", "ws://"),
            ("ws://h:http/", "port number"),
            ("ws://:80/", "no host"),
            ("ws://u@h:1/", "user info"),
        ] {
            match host_port(url) {
                Err(TransportError::Config(m)) => {
                    assert!(m.contains(needle) && m.contains(url), "{url}: {m}")
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }
}
