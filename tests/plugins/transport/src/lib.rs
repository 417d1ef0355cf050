//! Test transport: newline-delimited JSON-RPC over plain TCP, to the address in config `addr`.
//! Exercises wasi:sockets through the host's network grant.
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
}

fn io(e: std::io::Error) -> TransportError {
    TransportError::Io(e.to_string())
}

impl Guest for Plugin {
    type Connection = Tcp;

    fn connect(config: Vec<(String, String)>) -> Result<Connection, TransportError> {
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
        self.stream.borrow_mut().take();
        Ok(())
    }
}

export!(Plugin);
