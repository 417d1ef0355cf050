//! A transport: carries MCP's JSON-RPC messages to a server. This one speaks newline-delimited
//! JSON over plain TCP to the `address` in its config. It may only reach what the user granted
//! (`[plugins.grants.NAME] network = ["host:port"]`); sockets go through wasi:sockets.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::TcpStream;
use std::time::Duration;

use rkmcp_plugin_sdk::{Config, Connection, Transport, TransportError};

struct Tcp;

struct Conn {
    /// One stream for both directions: `try_clone` is not supported on wasm32-wasip2. Writes
    /// go around the buffer (`get_mut`), which only buffers reads.
    stream: BufReader<TcpStream>,
    /// A line cut off by a read timeout: its start was already taken from the socket. Bytes,
    /// not a String: the timeout may fall inside a multi-byte character.
    partial: Vec<u8>,
}

impl Transport for Tcp {
    type Connection = Conn;

    fn new() -> Self {
        Tcp
    }

    fn connect(&mut self, config: &Config) -> Result<Conn, TransportError> {
        // An IP address: a host name would also need name lookup granted.
        let address = config.require("address")?;
        let stream = TcpStream::connect(address)
            .map_err(|e| TransportError::Io(format!("connect {address}: {e}")))?;
        Ok(Conn {
            stream: BufReader::new(stream),
            partial: Vec::new(),
        })
    }
}

impl Connection for Conn {
    fn send(&mut self, message: &str) -> Result<(), TransportError> {
        let line = format!("{}\n", message.trim_end());
        self.stream
            .get_mut()
            .write_all(line.as_bytes())
            .map_err(|e| TransportError::Io(e.to_string()))
    }

    fn receive(&mut self, timeout: Duration) -> Result<Option<String>, TransportError> {
        // A zero timeout would mean "block forever" to std: wait at least 1 ms.
        let timeout = timeout.max(Duration::from_millis(1));
        self.stream
            .get_ref()
            .set_read_timeout(Some(timeout))
            .map_err(|e| TransportError::Io(e.to_string()))?;
        loop {
            match self.stream.read_until(b'\n', &mut self.partial) {
                Ok(0) => return Err(TransportError::Closed),
                Ok(_) => {
                    let line = std::mem::take(&mut self.partial);
                    let line = String::from_utf8(line).map_err(|_| {
                        TransportError::Protocol("the server sent a line that is not UTF-8".into())
                    })?;
                    let line = line.trim();
                    // Blank lines between messages are not messages.
                    if !line.is_empty() {
                        return Ok(Some(line.to_string()));
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Ok(None);
                }
                Err(e) => return Err(TransportError::Io(e.to_string())),
            }
        }
    }

    fn close(&mut self) -> Result<(), TransportError> {
        // The peer may already be gone; closing is done either way.
        let _ = self.stream.get_ref().shutdown(std::net::Shutdown::Both);
        Ok(())
    }
}

rkmcp_plugin_sdk::export_transport!(Tcp);
