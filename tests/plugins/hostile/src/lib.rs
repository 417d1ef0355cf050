//! A deliberately hostile detector. `start-session(format)` picks the misbehaviour and each
//! `feed(chunk)` performs it, with `chunk` as its argument (a path, an address, a name). Probes
//! that a sandbox should refuse report `err:<message>` as text instead of trapping, so tests can
//! tell "refused by the sandbox" from "crashed".
use std::cell::Cell;
use std::hint::black_box;
use std::io::Write;

use exports::rkmcp::plugin::detector::{Guest, GuestSession, Session};
use rkmcp::plugin::types::{Event, LogLevel};

wit_bindgen::generate!({
    path: "../../../wit/rkmcp-plugin@0.1.0",
    world: "detector-plugin",
});

struct Plugin;

struct Hostile {
    mode: String,
    feeds: Cell<u32>,
}

const MODES: &[&str] = &[
    "echo",
    "echo-until-bracket",
    "loop",
    "memory-bomb",
    "recursion",
    "read",
    "write",
    "connect",
    "env",
    "flood",
    "huge",
    "panic",
    "log",
    "config",
    "events",
    "open-files",
    "panic-with",
    "say",
];

impl Guest for Plugin {
    type Session = Hostile;

    fn start_session(format: String) -> Result<Session, String> {
        if !MODES.contains(&format.as_str()) {
            return Err(format!("unknown mode {format:?}"));
        }
        Ok(Session::new(Hostile {
            mode: format,
            feeds: Cell::new(0),
        }))
    }
}

fn outcome<T: std::fmt::Display, E: std::fmt::Display>(r: Result<T, E>) -> Vec<Event> {
    vec![Event::Text(match r {
        Ok(v) => format!("ok:{v}"),
        Err(e) => format!("err:{e}"),
    })]
}

// Unbounded on purpose: the host must stop it with a stack-overflow trap. Only scalars, so
// the frames live on the wasm call stack (which wasmtime bounds) rather than on Rust's shadow
// stack in linear memory.
#[allow(unconditional_recursion)]
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    black_box(recurse(black_box(depth + 1))).wrapping_add(depth)
}

impl GuestSession for Hostile {
    fn feed(&self, chunk: String) -> Vec<Event> {
        self.feeds.set(self.feeds.get() + 1);
        match self.mode.as_str() {
            "echo" => vec![Event::Text(chunk)],
            // Healthy until the model starts a call: a plugin that fails half-way through an answer.
            "echo-until-bracket" if chunk.contains('[') => {
                panic!("hostile plugin met a bracket (feed #{})", self.feeds.get())
            }
            "echo-until-bracket" => vec![Event::Text(chunk)],
            "loop" => {
                let mut n = 0u64;
                loop {
                    n = black_box(n.wrapping_add(1));
                }
            }
            "memory-bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    black_box(&hoard);
                }
            }
            "recursion" => vec![Event::Text(recurse(0).to_string())],
            "read" => outcome(std::fs::read_to_string(&chunk)),
            "write" => outcome(std::fs::write(&chunk, b"written by a plugin").map(|()| "written")),
            "connect" => outcome(
                std::net::TcpStream::connect(&chunk)
                    .map(|s| s.peer_addr().map(|a| a.to_string()).unwrap_or_default()),
            ),
            "env" => outcome(std::env::var(&chunk)),
            "flood" => {
                let lines: u32 = chunk.parse().unwrap_or(100_000);
                let mut out = std::io::stdout().lock();
                for i in 0..lines {
                    let _ = writeln!(
                        out,
                        "flood line {i} ........................................"
                    );
                }
                vec![Event::Text(format!("flooded {lines}"))]
            }
            "huge" => {
                let mib: usize = chunk.parse().unwrap_or(16);
                vec![Event::Text("x".repeat(mib << 20))]
            }
            "panic" => panic!(
                "hostile plugin panicked on purpose (feed #{})",
                self.feeds.get()
            ),
            "log" => {
                rkmcp::plugin::host::log(
                    LogLevel::Info,
                    &chunk,
                    &[("feeds".to_string(), self.feeds.get().to_string())],
                );
                vec![]
            }
            "config" => outcome(rkmcp::plugin::host::config_get(&chunk).ok_or("unset")),
            // `chunk` empty events: no bytes, but each costs the host memory.
            "events" => vec![Event::Text(String::new()); chunk.parse().unwrap_or(1_000_000)],
            // Opens `chunk` again and again and keeps every file open.
            "open-files" => {
                let mut open = Vec::new();
                let r = loop {
                    if open.len() == 100_000 {
                        break Ok(open.len());
                    }
                    match std::fs::File::open(&chunk) {
                        Ok(f) => open.push(f),
                        Err(e) => break Err(format!("after {} files: {e}", open.len())),
                    }
                };
                outcome(r)
            }
            "panic-with" => panic!("{chunk}"),
            // Says `chunk` everywhere a plugin can: stderr, the host log and a text event.
            "say" => {
                eprintln!("{chunk}");
                rkmcp::plugin::host::log(LogLevel::Warn, &chunk, &[(chunk.clone(), chunk.clone())]);
                vec![Event::Text(chunk)]
            }
            _ => unreachable!("mode checked in start-session"),
        }
    }

    fn finish(&self) -> Vec<Event> {
        Vec::new()
    }
}

export!(Plugin);
