//! A transport: carries MCP's JSON-RPC messages to a server. This one speaks newline-delimited
//! JSON over plain TCP to the `address` in its config. It may only reach what the user granted
//! (`[plugins.grants.NAME] network = ["host:port"]`); sockets go through wasi:sockets.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::TcpStream;
use std::time::Duration;

use rkmcp_plugin_sdk::{Config, Connection, Transport, TransportError};

struct Tcp;

struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// A line cut off by a read timeout: its start was already consumed from the socket.
    partial: String,
}

impl Transport for Tcp {
    type Connection = Conn;

    fn new() -> Self {
        Tcp
    }

    fn connect(&mut self, config: &Config) -> Result<Conn, TransportError> {
        let address = config
            .get("address")
            .ok_or_else(|| TransportError::Config("set config.address = \"host:port\"".into()))?;
        let stream = TcpStream::connect(address)
            .map_err(|e| TransportError::Io(format!("connect {address}: {e}")))?;
        let writer = stream
            .try_clone()
            .map_err(|e| TransportError::Io(e.to_string()))?;
        Ok(Conn {
            reader: BufReader::new(stream),
            writer,
            partial: String::new(),
        })
    }
}

impl Connection for Conn {
    fn send(&mut self, message: &str) -> Result<(), TransportError> {
        let line = format!("{}\n", message.trim_end());
        self.writer
            .write_all(line.as_bytes())
            .map_err(|e| TransportError::Io(e.to_string()))
    }

    fn receive(&mut self, timeout: Duration) -> Result<Option<String>, TransportError> {
        let timeout = timeout.max(Duration::from_millis(1));
        self.reader
            .get_ref()
            .set_read_timeout(Some(timeout))
            .map_err(|e| TransportError::Io(e.to_string()))?;
        match self.reader.read_line(&mut self.partial) {
            Ok(0) => Err(TransportError::Closed),
            Ok(_) => Ok(Some(std::mem::take(&mut self.partial).trim_end().to_string())),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(None),
            Err(e) => Err(TransportError::Io(e.to_string())),
        }
    }

    fn close(&mut self) -> Result<(), TransportError> {
        let _ = self.writer.shutdown(std::net::Shutdown::Both);
        Ok(())
    }
}

rkmcp_plugin_sdk::export_transport!(Tcp);
