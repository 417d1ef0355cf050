//! Keeps a model's reasoning apart from its answer: a `<think>…</think>` (or the family's own
//! markers) block at the start of a response becomes [`DetectorEvent::Reasoning`], and only the
//! rest reaches the format's detector — so a call written while reasoning is never run.
//!
//! Reasoning opens only at the start of a response (after whitespace), or before the first
//! token when the rendered prompt already opened the block (then the reply holds a lone close
//! marker). An open marker later in the answer is the answer's own text (say, inside an argument
//! value), so the format's detector sees it untouched.

use crate::scan::{find_first, held_suffix};
use crate::{DetectorEvent, ToolCallDetector};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing but whitespace yet: a reasoning block may still open.
    Start,
    /// Inside the reasoning block of marker pair `pair`; `lead`: its leading whitespace is still
    /// being dropped.
    Reasoning { pair: usize, lead: bool },
    /// Right after the block: whitespace before the answer is dropped.
    AfterReasoning,
    /// The answer: everything goes to the format's detector.
    Answer,
}

/// Splits a response into reasoning events and the answer text.
pub(crate) struct Splitter {
    pairs: &'static [(&'static str, &'static str)],
    /// Markers that end the block too but belong to the answer.
    ends: &'static [&'static str],
    open_in_prompt: bool,
    state: State,
    buf: String,
}

impl Splitter {
    pub(crate) fn new(
        pairs: &'static [(&'static str, &'static str)],
        ends: &'static [&'static str],
        open_in_prompt: bool,
    ) -> Self {
        Splitter {
            pairs,
            ends,
            open_in_prompt,
            state: Self::first_state(open_in_prompt),
            buf: String::new(),
        }
    }

    /// Reasoning events of `chunk` into `out`, the answer part into `answer`.
    pub(crate) fn feed(&mut self, chunk: &str, out: &mut Vec<DetectorEvent>, answer: &mut String) {
        if self.state == State::Answer {
            answer.push_str(chunk);
            return;
        }
        self.buf.push_str(chunk);
        self.run(false, out, answer);
    }

    /// The end of a response: what was held back; then ready for the next response.
    pub(crate) fn finish(&mut self, out: &mut Vec<DetectorEvent>, answer: &mut String) {
        self.run(true, out, answer);
        self.state = Self::first_state(self.open_in_prompt);
    }

    fn first_state(open_in_prompt: bool) -> State {
        if open_in_prompt {
            State::Reasoning {
                pair: 0,
                lead: true,
            }
        } else {
            State::Start
        }
    }

    fn run(&mut self, eof: bool, out: &mut Vec<DetectorEvent>, answer: &mut String) {
        loop {
            match self.state {
                State::Start => {
                    let t = self.buf.trim_start();
                    if t.is_empty() {
                        if eof {
                            answer.push_str(&std::mem::take(&mut self.buf));
                        }
                        return;
                    }
                    let ws = self.buf.len() - t.len();
                    if let Some(pair) = self.pairs.iter().position(|(o, _)| t.starts_with(o)) {
                        self.buf.drain(..ws + self.pairs[pair].0.len());
                        self.state = State::Reasoning { pair, lead: true };
                        continue;
                    }
                    if !eof
                        && self
                            .pairs
                            .iter()
                            .any(|(o, _)| o.len() > t.len() && o.starts_with(t))
                    {
                        return;
                    }
                    self.state = State::Answer;
                }
                State::Reasoning { pair, lead } => {
                    if lead {
                        let t = self.buf.trim_start();
                        let ws = self.buf.len() - t.len();
                        self.buf.drain(..ws);
                        if self.buf.is_empty() && !eof {
                            return;
                        }
                        self.state = State::Reasoning { pair, lead: false };
                    }
                    let close = self.pairs[pair].1;
                    if let Some(p) = self.buf.find(close) {
                        push_reasoning(out, self.buf[..p].trim_end());
                        self.buf.drain(..p + close.len());
                        self.state = State::AfterReasoning;
                        continue;
                    }
                    // An implicit end (calls started from the reasoning) counts only if the
                    // block never closes: a close marker after it makes it part of the
                    // reasoning (as vLLM's Qwen3 and Kimi K2 parsers read a whole response).
                    let implicit = find_first(&self.buf, self.ends).map(|(p, _)| p);
                    if eof {
                        // Cut off while reasoning: all of it was reasoning, up to the calls.
                        let p = implicit.unwrap_or(self.buf.len());
                        push_reasoning(out, self.buf[..p].trim_end());
                        answer.push_str(&self.buf[p..]);
                        self.buf.clear();
                        return;
                    }
                    // Hold from an implicit end on, else what could become the close marker
                    // or an implicit end, and trailing whitespace (the block's last whitespace
                    // is not part of the reasoning).
                    let marker = implicit.unwrap_or_else(|| {
                        let mut markers = vec![close];
                        markers.extend_from_slice(self.ends);
                        self.buf.len() - held_suffix(&self.buf, &markers)
                    });
                    let emit = self.buf[..marker].trim_end().len();
                    push_reasoning(out, &self.buf[..emit]);
                    self.buf.drain(..emit);
                    return;
                }
                State::AfterReasoning => {
                    let t = self.buf.trim_start();
                    let ws = self.buf.len() - t.len();
                    self.buf.drain(..ws);
                    if self.buf.is_empty() {
                        return;
                    }
                    self.state = State::Answer;
                }
                State::Answer => {
                    answer.push_str(&std::mem::take(&mut self.buf));
                    return;
                }
            }
        }
    }
}

fn push_reasoning(out: &mut Vec<DetectorEvent>, s: &str) {
    if !s.is_empty() {
        out.push(DetectorEvent::Reasoning(s.to_string()));
    }
}

/// A format's detector behind a [`Splitter`].
pub(crate) struct ReasoningSplitter {
    inner: Box<dyn ToolCallDetector>,
    split: Splitter,
}

impl ReasoningSplitter {
    pub(crate) fn new(
        inner: Box<dyn ToolCallDetector>,
        pairs: &'static [(&'static str, &'static str)],
        ends: &'static [&'static str],
        open_in_prompt: bool,
    ) -> Self {
        ReasoningSplitter {
            inner,
            split: Splitter::new(pairs, ends, open_in_prompt),
        }
    }
}

impl ToolCallDetector for ReasoningSplitter {
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent> {
        let mut out = Vec::new();
        let mut answer = String::new();
        self.split.feed(chunk, &mut out, &mut answer);
        if !answer.is_empty() {
            out.extend(self.inner.feed(&answer));
        }
        out
    }

    fn finish(&mut self) -> Vec<DetectorEvent> {
        let mut out = Vec::new();
        let mut answer = String::new();
        self.split.finish(&mut out, &mut answer);
        if !answer.is_empty() {
            out.extend(self.inner.feed(&answer));
        }
        out.extend(self.inner.finish());
        out
    }
}
