//! A detector built against `rkmcp:plugin@9.0.0`, a contract version the host does not know:
//! the host must refuse it with a message naming the supported versions.
use exports::rkmcp::plugin::detector::{Guest, GuestSession, Session};
use rkmcp::plugin::types::Event;

wit_bindgen::generate!({
    path: "wit",
    world: "detector-plugin",
});

struct Plugin;

struct Echo;

impl Guest for Plugin {
    type Session = Echo;

    fn start_session(_format: String) -> Result<Session, String> {
        Ok(Session::new(Echo))
    }
}

impl GuestSession for Echo {
    fn feed(&self, chunk: String) -> Vec<Event> {
        vec![Event::Text(chunk)]
    }

    fn finish(&self) -> Vec<Event> {
        Vec::new()
    }
}

export!(Plugin);
