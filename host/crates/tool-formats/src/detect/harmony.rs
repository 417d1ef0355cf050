//! GPT-OSS harmony: the response is a sequence of messages
//! `<|start|>assistant<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>json]<|message|>BODY<|end|>`.
//! Messages addressed `to=functions.NAME` are calls (ended by `<|call|>`); the analysis channel
//! is reasoning; other bodies (final, commentary preambles) are text. Headers and markers are
//! never shown. When the prompt ends with `<|start|>assistant`, the reply starts with the rest of
//! a header (` to=functions.f<|channel|>commentary json<|message|>…`).

use super::{Ids, Setup, push_text};
use crate::DetectorEvent;
use crate::parse::{Parsed, call_with_json_args};
use crate::scan::{find_first, held_suffix, unquoted_find};

const START: &str = "<|start|>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const END: &str = "<|end|>";
const CALL: &str = "<|call|>";
const RETURN: &str = "<|return|>";
const CONSTRAIN: &str = "<|constrain|>";
const ALL: &[&str] = &[START, CHANNEL, MESSAGE, END, CALL, RETURN, CONSTRAIN];
const BODY_ENDS: &[&str] = &[END, CALL, RETURN, START];
/// A reply that starts inside the assistant header (`<|start|>assistant` was in the prompt).
const HEADER_REST: &str = "to=";

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Body of a message that is not a call (or text outside any message); `reasoning` for the
    /// analysis channel.
    Content { reasoning: bool },
    /// Between `<|start|>`/`<|channel|>` and `<|message|>`; `buf` holds the header.
    Header,
    /// Body of a call message; `buf` holds header + body, `body_at` where the body starts.
    CallBody { recipient: String, body_at: usize },
}

pub(crate) struct HarmonyDetector {
    buf: String,
    state: State,
    /// Nothing but whitespace seen yet in this response.
    at_start: bool,
    ids: Ids,
}

impl HarmonyDetector {
    pub(crate) fn new(setup: &Setup) -> Self {
        HarmonyDetector {
            buf: String::new(),
            state: State::Content { reasoning: false },
            at_start: true,
            ids: Ids::new(setup),
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

/// The channel name in a header (`analysis`, `commentary`, `final`).
fn channel(header: &str) -> &str {
    let Some(p) = header.find(CHANNEL) else {
        return "";
    };
    let r = &header[p + CHANNEL.len()..];
    let end = r
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(r.len());
    &r[..end]
}

fn parse_call(raw: &str, recipient: &str, body: &str) -> Parsed {
    let name = recipient.strip_prefix("functions.").unwrap_or(recipient);
    call_with_json_args(raw, name, body, None)
}

/// Where a call body ends: the first end marker outside JSON strings when the body is JSON.
fn body_end(body: &str) -> Option<(usize, usize)> {
    if body.trim_start().starts_with('{') {
        unquoted_find(body, BODY_ENDS)
    } else {
        find_first(body, BODY_ENDS)
    }
}

fn push(out: &mut Vec<DetectorEvent>, reasoning: bool, s: &str) {
    if s.is_empty() {
        return;
    }
    if reasoning {
        out.push(DetectorEvent::Reasoning(s.to_string()));
    } else {
        push_text(out, s);
    }
}

impl HarmonyDetector {
    fn run(&mut self, eof: bool) -> Vec<DetectorEvent> {
        let mut out = Vec::new();
        loop {
            match self.state.clone() {
                State::Content { reasoning } => {
                    if self.at_start {
                        let t = self.buf.trim_start();
                        if t.is_empty() || (HEADER_REST.starts_with(t) && !eof) {
                            if eof {
                                // A response of whitespace only is text, like any leading
                                // whitespace.
                                push(&mut out, reasoning, &self.buf);
                                self.buf.clear();
                            }
                            break;
                        }
                        self.at_start = false;
                        if t.starts_with(HEADER_REST) {
                            let ws = self.buf.len() - t.len();
                            self.buf.drain(..ws);
                            self.state = State::Header;
                            continue;
                        }
                    }
                    match find_first(&self.buf, ALL) {
                        Some((p, i)) => {
                            push(&mut out, reasoning, &self.buf[..p]);
                            let m = ALL[i];
                            if m == START || m == CHANNEL {
                                // The header keeps its markers so a malformed call shows them.
                                self.buf.drain(..p);
                                self.state = State::Header;
                            } else {
                                self.buf.drain(..p + m.len());
                                if m != MESSAGE && m != CONSTRAIN {
                                    self.state = State::Content { reasoning: false };
                                }
                            }
                        }
                        None => {
                            let keep = if eof { 0 } else { held_suffix(&self.buf, ALL) };
                            let emit = self.buf.len() - keep;
                            push(&mut out, reasoning, &self.buf[..emit]);
                            self.buf.drain(..emit);
                            break;
                        }
                    }
                }
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
                                let reasoning = channel(header) == "analysis";
                                self.buf.drain(..p + MESSAGE.len());
                                self.state = State::Content { reasoning };
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
                        self.state = State::Content { reasoning: false };
                        break;
                    }
                    None => break,
                },
                State::CallBody { recipient, body_at } => {
                    let body = &self.buf[body_at..];
                    match body_end(body) {
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
                            self.state = State::Content { reasoning: false };
                        }
                        None if eof => {
                            // `<|call|>` is a stop token that runtimes often leave out: a
                            // complete JSON body is the call; a cut-off one is malformed.
                            let parsed = parse_call(&self.buf, &recipient, body);
                            self.ids.events(vec![parsed], &mut out);
                            self.buf.clear();
                            self.state = State::Content { reasoning: false };
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

/// `response` without its analysis-channel messages (harmony's reasoning).
pub(crate) fn strip_analysis(response: &str) -> String {
    let mut out = String::new();
    let mut rest = response;
    while let Some(p) = rest.find("<|channel|>analysis") {
        // The message starts at its `<|start|>` when there is one right before.
        let start = rest[..p]
            .rfind(START)
            .filter(|s| !rest[*s..p].contains(END))
            .unwrap_or(p);
        out.push_str(&rest[..start]);
        let after = &rest[p..];
        match after.find(END) {
            Some(e) => rest = &after[e + END.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

impl crate::ToolCallDetector for HarmonyDetector {
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent> {
        self.buf.push_str(chunk);
        self.run(false)
    }

    fn finish(&mut self) -> Vec<DetectorEvent> {
        let out = self.run(true);
        self.at_start = true;
        self.state = State::Content { reasoning: false };
        out
    }
}
