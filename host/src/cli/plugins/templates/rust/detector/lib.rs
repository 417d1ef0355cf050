//! A tool-call detector: reads the model's answer as it streams and turns it into text and
//! tool calls. This one recognises lines `CALL name {"json": "arguments"}`; everything else is
//! text. Chunks may split a line anywhere, so a line is only judged once it is complete.

use rkmcp_plugin_sdk::{Detector, DetectorSession, Event};

struct LineCalls;

struct Session {
    /// The incomplete last line, held until its newline (or the end of the answer).
    pending: String,
    calls: u32,
}

impl Detector for LineCalls {
    type Session = Session;

    fn new() -> Self {
        LineCalls
    }

    fn start_session(&mut self, _format: &str) -> Result<Session, String> {
        Ok(Session {
            pending: String::new(),
            calls: 0,
        })
    }
}

impl Session {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        let Some(rest) = line.trim_end().strip_prefix("CALL ") else {
            out.push(Event::Text(line.to_string()));
            return;
        };
        let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
        match serde_json::from_str::<serde_json::Value>(args) {
            Ok(args) => {
                self.calls += 1;
                out.push(Event::tool_call(
                    format!("call-{}", self.calls),
                    name,
                    &args,
                ));
            }
            Err(e) => out.push(Event::malformed(
                line,
                format!("arguments are not JSON: {e}"),
            )),
        }
    }
}

impl DetectorSession for Session {
    fn feed(&mut self, chunk: &str) -> Vec<Event> {
        self.pending.push_str(chunk);
        let mut out = Vec::new();
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            self.line(&line, &mut out);
        }
        out
    }

    fn finish(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        let rest = std::mem::take(&mut self.pending);
        if !rest.is_empty() {
            self.line(&rest, &mut out);
        }
        out
    }
}

rkmcp_plugin_sdk::export_detector!(LineCalls);
