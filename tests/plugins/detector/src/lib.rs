//! A small healthy detector used beside the hostile plugins: it must keep working whatever they do.
use std::cell::RefCell;

use exports::rkmcp::plugin::detector::{Guest, GuestSession, Session};
use rkmcp::plugin::types::{Event, MalformedCall, ToolCall};

mod scan;

wit_bindgen::generate!({
    path: "../../../wit/rkmcp-plugin@0.1.0",
    world: "detector-plugin",
});

struct Plugin;

struct HermesSession(RefCell<scan::Scanner>);

fn convert(found: Vec<scan::Found>) -> Vec<Event> {
    found
        .into_iter()
        .map(|f| match f {
            scan::Found::Text(t) => Event::Text(t),
            scan::Found::Call {
                id,
                name,
                arguments_json,
            } => Event::ToolCall(ToolCall {
                id,
                name,
                arguments_json,
            }),
            scan::Found::Malformed { raw, error } => Event::Malformed(MalformedCall { raw, error }),
        })
        .collect()
}

impl Guest for Plugin {
    type Session = HermesSession;

    fn start_session(format: String) -> Result<Session, String> {
        match format.as_str() {
            "" | "hermes" => Ok(Session::new(HermesSession(RefCell::default()))),
            other => Err(format!(
                "unknown format {other:?}; this detector knows \"hermes\""
            )),
        }
    }
}

impl GuestSession for HermesSession {
    fn feed(&self, chunk: String) -> Vec<Event> {
        let mut out = Vec::new();
        self.0.borrow_mut().feed(&chunk, &mut out);
        convert(out)
    }

    fn finish(&self) -> Vec<Event> {
        let mut out = Vec::new();
        self.0.borrow_mut().finish(&mut out);
        convert(out)
    }
}

export!(Plugin);
