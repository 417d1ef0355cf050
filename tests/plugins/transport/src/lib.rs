//! Test transport: newline-delimited JSON-RPC over plain TCP, to the address in config `addr`.
//! Exercises wasi:sockets through the host's network grant. With config `flood = "garbage"` or
//! `flood = "nested"` it opens no socket and answers every `receive` with a message that is not
//! JSON-RPC (text with escape sequences, or 100 000 nested brackets): a hostile transport.
use std::cell::RefCell;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use exports::rkmcp::plugin::transport::{Connection, Guest, GuestConnection, TransportError};

wit_bindgen::generate!({
    path: "../../../wit/rkmcp-plugin@0.1.0",
    world: "transport-plugin",
});

struct Plugin;

struct Tcp {
    stream: RefCell<Option<TcpStream>>,
    pending: RefCell<Vec<u8>>,
    flood: Option<String>,
    closed: std::cell::Cell<bool>,
}

fn io(e: std::io::Error) -> TransportError {
    TransportError::Io(e.to_string())
}

impl Guest for Plugin {
    type Connection = Tcp;

    fn connect(config: Vec<(String, String)>) -> Result<Connection, TransportError> {
        if let Some((_, mode)) = config.iter().find(|(k, _)| k == "flood") {
            return Ok(Connection::new(Tcp {
                stream: RefCell::new(None),
                pending: RefCell::new(Vec::new()),
                flood: Some(mode.clone()),
                closed: std::cell::Cell::new(false),
            }));
        }
        let addr = config
            .iter()
            .find(|(k, _)| k == "addr")
            .map(|(_, v)| v.clone())
            .ok_or_else(|| TransportError::Config("config value `addr` is missing".into()))?;
        let stream =
            TcpStream::connect(&addr).map_err(|e| TransportError::Io(format!("{addr}: {e}")))?;
        stream.set_nonblocking(true).map_err(io)?;
        Ok(Connection::new(Tcp {
            stream: RefCell::new(Some(stream)),
            pending: RefCell::new(Vec::new()),
            flood: None,
            closed: std::cell::Cell::new(false),
        }))
    }
}

impl Tcp {
    fn take_line(&self) -> Result<Option<String>, TransportError> {
        let mut pending = self.pending.borrow_mut();
        let Some(pos) = pending.iter().position(|&b| b == b'\n') else {
            return Ok(None);
        };
        let line: Vec<u8> = pending.drain(..=pos).collect();
        String::from_utf8(line[..line.len() - 1].to_vec())
            .map(Some)
            .map_err(|_| TransportError::Protocol("message is not UTF-8".into()))
    }
}

impl GuestConnection for Tcp {
    fn send(&self, message: String) -> Result<(), TransportError> {
        if self.flood.is_some() {
            return if self.closed.get() {
                Err(TransportError::Closed)
            } else {
                Ok(())
            };
        }
        let mut guard = self.stream.borrow_mut();
        let stream = guard.as_mut().ok_or(TransportError::Closed)?;
        let mut bytes = message.into_bytes();
        bytes.push(b'\n');
        let mut written = 0;
        while written < bytes.len() {
            match stream.write(&bytes[written..]) {
                Ok(0) => return Err(TransportError::Closed),
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => return Err(io(e)),
            }
        }
        Ok(())
    }

    fn receive(&self, timeout_ms: u32) -> Result<Option<String>, TransportError> {
        match self.flood.as_deref() {
            _ if self.closed.get() => return Err(TransportError::Closed),
            Some("nested") => return Ok(Some("[".repeat(100_000))),
            Some(_) => {
                return Ok(Some(
                    "this is not JSON-RPC \x1b]0;pwned\x07\x1b[2J".to_string(),
                ));
            }
            None => {}
        }
        let deadline = Instant::now() + Duration::from_millis(timeout_ms.into());
        loop {
            if let Some(line) = self.take_line()? {
                return Ok(Some(line));
            }
            let mut buf = [0u8; 16 * 1024];
            let read = {
                let mut guard = self.stream.borrow_mut();
                let stream = guard.as_mut().ok_or(TransportError::Closed)?;
                stream.read(&mut buf)
            };
            match read {
                Ok(0) => return Err(TransportError::Closed),
                Ok(n) => self.pending.borrow_mut().extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Ok(None);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(io(e)),
            }
        }
    }

    fn close(&self) -> Result<(), TransportError> {
        self.closed.set(true);
        self.stream.borrow_mut().take();
        Ok(())
    }
}

export!(Plugin);
