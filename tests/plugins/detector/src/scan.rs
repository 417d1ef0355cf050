//! Streaming scanner for Hermes-style `<tool_call>{"name":…,"arguments":{…}}</tool_call>` markers.
//!
//! Plain Rust with no WIT types, so the plugin host's bench can compile the very same code
//! natively (its "native twin") and compare throughput with the component.

pub const OPEN: &str = "<tool_call>";
pub const CLOSE: &str = "</tool_call>";

#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Text(String),
    Call {
        id: String,
        name: String,
        arguments_json: String,
    },
    Malformed {
        raw: String,
        error: String,
    },
}

#[derive(Default)]
pub struct Scanner {
    buf: String,
    in_call: bool,
    calls: u32,
}

impl Scanner {
    pub fn feed(&mut self, chunk: &str, out: &mut Vec<Found>) {
        self.buf.push_str(chunk);
        loop {
            if self.in_call {
                let Some(end) = self.buf.find(CLOSE) else {
                    return;
                };
                let body: String = self.buf[..end].to_string();
                self.buf.drain(..end + CLOSE.len());
                self.in_call = false;
                out.push(self.parse_call(&body));
            } else if let Some(start) = self.buf.find(OPEN) {
                if start > 0 {
                    out.push(Found::Text(self.buf[..start].to_string()));
                }
                self.buf.drain(..start + OPEN.len());
                self.in_call = true;
            } else {
                // Hold back a tail that could still grow into the opening marker.
                let keep = held_back(&self.buf);
                let emit = self.buf.len() - keep;
                if emit > 0 {
                    out.push(Found::Text(self.buf[..emit].to_string()));
                    self.buf.drain(..emit);
                }
                return;
            }
        }
    }

    pub fn finish(&mut self, out: &mut Vec<Found>) {
        let rest = std::mem::take(&mut self.buf);
        if self.in_call {
            self.in_call = false;
            out.push(Found::Malformed {
                raw: format!("{OPEN}{rest}"),
                error: format!("the response ended before {CLOSE}"),
            });
        } else if !rest.is_empty() {
            out.push(Found::Text(rest));
        }
    }

    fn parse_call(&mut self, body: &str) -> Found {
        let malformed = |error: String| Found::Malformed {
            raw: format!("{OPEN}{body}{CLOSE}"),
            error,
        };
        let value: serde_json::Value = match serde_json::from_str(body.trim()) {
            Ok(v) => v,
            Err(e) => return malformed(format!("the call is not valid JSON: {e}")),
        };
        let Some(name) = value.get("name").and_then(|n| n.as_str()) else {
            return malformed("the call has no string field \"name\"".into());
        };
        let arguments = value
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()));
        if !arguments.is_object() {
            return malformed("\"arguments\" must be a JSON object".into());
        }
        self.calls += 1;
        Found::Call {
            id: format!("call_{}", self.calls),
            name: name.to_string(),
            arguments_json: arguments.to_string(),
        }
    }
}

/// Length of the longest suffix of `buf` that is a proper prefix of [`OPEN`].
fn held_back(buf: &str) -> usize {
    let bytes = buf.as_bytes();
    let max = (OPEN.len() - 1).min(bytes.len());
    (1..=max)
        .rev()
        .find(|&n| OPEN.as_bytes().starts_with(&bytes[bytes.len() - n..]))
        .unwrap_or(0)
}
