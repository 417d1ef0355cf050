//! Detector for formats where a call is the whole message (llama3 JSON, plain JSON, pythonic):
//! the message is buffered only while it could still be a call, otherwise it streams as text.
//! Optional tag markers (`<|python_tag|>`) open a call block anywhere in the text.

use super::marker::{Block, End};
use super::{Ids, Setup, push_text};
use crate::DetectorEvent;
use crate::parse::Parsed;
use crate::scan::{find_first, held_suffix};

/// How a message prefix relates to the call syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Cannot be a call: stream it as text.
    No,
    /// Could be a call or an ordinary answer (e.g. a JSON answer); decided when the value closes.
    Maybe,
    /// Clearly meant as a call: a parse failure is reported as malformed.
    Attempt,
}

pub(crate) struct WholeSpec {
    /// First characters that may open a call value.
    pub triggers: &'static [char],
    /// Where the value opened at `s[0]` closes.
    /// `eof`: the response ended, so optional trailing syntax (a closing fence) will not come.
    pub value_end: fn(&str, bool) -> Option<usize>,
    pub verdict: fn(&str) -> Verdict,
    /// Parses a closed value: `Err(None)` = not a call (show as text), `Err(Some(e))` = parse error.
    pub parse: fn(&str) -> Result<Vec<Parsed>, Option<String>>,
    /// Characters allowed between consecutive calls (besides whitespace).
    pub separators: &'static str,
    /// Marker-opened call blocks recognised anywhere in the text.
    pub tags: &'static [Block],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of the message (`after_call` false) or right after calls (true).
    Start {
        after_call: bool,
    },
    /// Buffering a value that opened with a trigger character.
    Value,
    /// Plain text (only tag markers are looked for).
    Pass,
    InTag {
        tag: usize,
    },
}

pub(crate) struct WholeDetector {
    spec: &'static WholeSpec,
    tag_starts: Vec<&'static str>,
    buf: String,
    state: State,
    ids: Ids,
}

impl WholeDetector {
    pub(crate) fn new(spec: &'static WholeSpec, setup: &Setup) -> Self {
        WholeDetector {
            spec,
            tag_starts: spec.tags.iter().map(|t| t.start).collect(),
            buf: String::new(),
            state: State::Start { after_call: false },
            ids: Ids::new(setup),
        }
    }

    fn run(&mut self, eof: bool) -> Vec<DetectorEvent> {
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Start { after_call } => {
                    let skip = self
                        .buf
                        .find(|c: char| {
                            !(c.is_whitespace() || (after_call && self.spec.separators.contains(c)))
                        })
                        .unwrap_or(self.buf.len());
                    // Leading whitespace of the message is text; whitespace and separators
                    // between calls belong to the call syntax.
                    if !after_call {
                        push_text(&mut out, &self.buf[..skip]);
                    }
                    self.buf.drain(..skip);
                    let Some(first) = self.buf.chars().next() else {
                        break;
                    };
                    self.state = if self.spec.triggers.contains(&first) {
                        State::Value
                    } else {
                        State::Pass
                    };
                }
                State::Value => {
                    // The verdict only depends on the first characters, so deciding it before
                    // the value closes gives the same answer for every chunking.
                    let verdict = (self.spec.verdict)(&self.buf);
                    if verdict == Verdict::No {
                        self.state = State::Pass;
                        continue;
                    }
                    if let Some(e) = (self.spec.value_end)(&self.buf, eof) {
                        let value = &self.buf[..e];
                        match (self.spec.parse)(value) {
                            Ok(calls) => self.ids.events(calls, &mut out),
                            Err(Some(err)) if verdict == Verdict::Attempt => {
                                self.ids.events(vec![Parsed::bad(value, err)], &mut out)
                            }
                            Err(_) => {
                                self.state = State::Pass;
                                continue;
                            }
                        }
                        self.buf.drain(..e);
                        self.state = State::Start { after_call: true };
                        continue;
                    }
                    match verdict {
                        Verdict::Attempt if eof => {
                            let raw = std::mem::take(&mut self.buf);
                            self.ids.events(
                                vec![Parsed::bad(&raw, "unterminated call at end of response")],
                                &mut out,
                            );
                        }
                        _ if eof => {
                            push_text(&mut out, &self.buf);
                            self.buf.clear();
                        }
                        _ => {}
                    }
                    break;
                }
                State::Pass => {
                    if let Some((p, t)) = find_first(&self.buf, &self.tag_starts) {
                        push_text(&mut out, &self.buf[..p]);
                        self.buf.drain(..p);
                        self.state = State::InTag { tag: t };
                        continue;
                    }
                    let keep = if eof {
                        0
                    } else {
                        held_suffix(&self.buf, &self.tag_starts)
                    };
                    let emit = self.buf.len() - keep;
                    push_text(&mut out, &self.buf[..emit]);
                    self.buf.drain(..emit);
                    break;
                }
                State::InTag { tag } => {
                    let b = &self.spec.tags[tag];
                    let body = &self.buf[b.start.len()..];
                    let End::Finder { find, .. } = &b.end;
                    let found = find(body);
                    match found {
                        Some((inner_end, consumed)) => {
                            let total = b.start.len() + consumed;
                            let parsed = (b.parse)(&self.buf[..total], &body[..inner_end], true);
                            self.ids.events(parsed, &mut out);
                            self.buf.drain(..total);
                            self.state = State::Start { after_call: true };
                        }
                        None if eof => {
                            let parsed = (b.parse)(&self.buf, body, false);
                            self.ids.events(parsed, &mut out);
                            self.buf.clear();
                            break;
                        }
                        None => {
                            self.state = State::InTag { tag };
                            break;
                        }
                    }
                }
            }
        }
        out
    }
}

impl crate::ToolCallDetector for WholeDetector {
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent> {
        self.buf.push_str(chunk);
        self.run(false)
    }

    fn finish(&mut self) -> Vec<DetectorEvent> {
        let out = self.run(true);
        self.state = State::Start { after_call: false };
        out
    }
}
