//! GPT-OSS harmony: the response is a sequence of messages
//! `<|start|>assistant<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json]<|message|>BODY<|end|>`.
//! Messages addressed `to=functions.NAME` are calls (ended by `<|call|>`); other message bodies
//! (analysis and final channels) are text. Headers and markers are never shown.

use serde_json::Value;

use super::{Ids, push_text};
use crate::DetectorEvent;
use crate::parse::{Parsed, kind};
use crate::scan::{find_first, held_suffix};

const START: &str = "<|start|>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const END: &str = "<|end|>";
const CALL: &str = "<|call|>";
const RETURN: &str = "<|return|>";
const CONSTRAIN: &str = "<|constrain|>";
const ALL: &[&str] = &[START, CHANNEL, MESSAGE, END, CALL, RETURN, CONSTRAIN];
const BODY_ENDS: &[&str] = &[END, CALL, RETURN, START];

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Body of a message that is not a call (or text outside any message).
    Content,
    /// Between `<|start|>`/`<|channel|>` and `<|message|>`; `buf` holds the header.
    Header,
    /// Body of a call message; `buf` holds header + body, `body_at` where the body starts.
    CallBody { recipient: String, body_at: usize },
}

pub(crate) struct HarmonyDetector {
    buf: String,
    state: State,
    ids: Ids,
}

impl Default for HarmonyDetector {
    fn default() -> Self {
        HarmonyDetector {
            buf: String::new(),
            state: State::Content,
            ids: Ids::default(),
        }
    }
}

/// `to=functions.get_weather` anywhere in the header (GPT-OSS puts it after the channel name or
/// after the role).
fn recipient(header: &str) -> Option<String> {
    let p = header.find("to=")?;
    let r = &header[p + 3..];
    let end = r
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(r.len());
    let name = r[..end].trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn parse_call(raw: &str, recipient: &str, body: &str) -> Parsed {
    let name = recipient
        .strip_prefix("functions.")
        .unwrap_or(recipient)
        .to_string();
    let t = body.trim();
    if t.is_empty() {
        return Parsed::Call {
            name,
            arguments: Value::Object(Default::default()),
            id: None,
        };
    }
    match serde_json::from_str::<Value>(t) {
        Ok(v @ Value::Object(_)) => Parsed::Call {
            name,
            arguments: v,
            id: None,
        },
        Ok(v) => Parsed::bad(
            raw,
            format!("arguments must be a JSON object, got {}", kind(&v)),
        ),
        Err(e) => Parsed::bad(raw, format!("invalid JSON arguments: {e}")),
    }
}

impl HarmonyDetector {
    fn run(&mut self, eof: bool) -> Vec<DetectorEvent> {
        let mut out = Vec::new();
        loop {
            match self.state.clone() {
                State::Content => match find_first(&self.buf, ALL) {
                    Some((p, i)) => {
                        push_text(&mut out, &self.buf[..p]);
                        let m = ALL[i];
                        if m == START || m == CHANNEL {
                            // The header keeps its markers so a malformed call shows them.
                            self.buf.drain(..p);
                            self.state = State::Header;
                        } else {
                            self.buf.drain(..p + m.len());
                        }
                    }
                    None => {
                        let keep = if eof { 0 } else { held_suffix(&self.buf, ALL) };
                        let emit = self.buf.len() - keep;
                        push_text(&mut out, &self.buf[..emit]);
                        self.buf.drain(..emit);
                        break;
                    }
                },
                State::Header => match self.buf.find(MESSAGE) {
                    Some(p) => {
                        let header = &self.buf[..p];
                        match recipient(header) {
                            Some(r) => {
                                self.state = State::CallBody {
                                    recipient: r,
                                    body_at: p + MESSAGE.len(),
                                }
                            }
                            None => {
                                self.buf.drain(..p + MESSAGE.len());
                                self.state = State::Content;
                            }
                        }
                    }
                    None if eof => {
                        if recipient(&self.buf).is_some() {
                            let raw = std::mem::take(&mut self.buf);
                            self.ids.events(
                                vec![Parsed::bad(&raw, "call header without <|message|>")],
                                &mut out,
                            );
                        }
                        self.buf.clear();
                        self.state = State::Content;
                        break;
                    }
                    None => break,
                },
                State::CallBody { recipient, body_at } => {
                    let body = &self.buf[body_at..];
                    match find_first(body, BODY_ENDS) {
                        Some((p, i)) => {
                            let m = BODY_ENDS[i];
                            // `<|start|>` opens the next message and stays in the buffer.
                            let consumed = if m == START {
                                body_at + p
                            } else {
                                body_at + p + m.len()
                            };
                            let parsed = parse_call(&self.buf[..consumed], &recipient, &body[..p]);
                            self.ids.events(vec![parsed], &mut out);
                            self.buf.drain(..consumed);
                            self.state = State::Content;
                        }
                        None if eof => {
                            let parsed = parse_call(&self.buf, &recipient, body);
                            self.ids.events(vec![parsed], &mut out);
                            self.buf.clear();
                            self.state = State::Content;
                            break;
                        }
                        None => break,
                    }
                }
            }
        }
        out
    }
}

impl crate::ToolCallDetector for HarmonyDetector {
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent> {
        self.buf.push_str(chunk);
        self.run(false)
    }

    fn finish(&mut self) -> Vec<DetectorEvent> {
        self.run(true)
    }
}
