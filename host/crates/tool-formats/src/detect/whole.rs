//! Detector for formats where a call is the whole message (llama3 JSON, plain JSON, pythonic):
//! the message is buffered only while it could still be a call, otherwise it streams as text.
//! Optional tag markers (`<|python_tag|>`) open a call block anywhere in the text, scanned by
//! the marker detector's [`Blocks`].

use super::marker::{Block, Blocks, Open};
use super::{Ids, Setup, push_text};
use crate::DetectorEvent;
use crate::parse::Parsed;

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
    InTag(Open),
}

pub(crate) struct WholeDetector {
    spec: &'static WholeSpec,
    tags: Blocks,
    buf: String,
    state: State,
    ids: Ids,
}

impl WholeDetector {
    pub(crate) fn new(spec: &'static WholeSpec, setup: &Setup) -> Self {
        WholeDetector {
            spec,
            tags: Blocks::new(spec.tags, &[]),
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
                State::Pass => match self.tags.text(&mut self.buf, eof, &mut out) {
                    Some(open) => self.state = State::InTag(open),
                    None => break,
                },
                State::InTag(mut open) => {
                    let done =
                        self.tags
                            .block(&mut open, &mut self.buf, eof, &mut self.ids, &mut out);
                    if !done {
                        self.state = State::InTag(open);
                        break;
                    }
                    self.state = State::Start { after_call: true };
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
