//! Drops a family's own end-of-turn tokens (`<|im_end|>`, `<|eot_id|>`, `</s>`, …) at the very
//! end of a response. A runtime that does not strip stop tokens leaves them in the text, where
//! the user would read them as part of the answer. Such a token anywhere else is left to the
//! format's detector (it is the model's text there).
//!
//! The filter sits in front of the whole detector: it holds back only a tail that could still be
//! end tokens (complete ones followed by whitespace, then maybe the start of another), so the
//! decision depends on the text alone, never on the chunking.

use crate::{DetectorEvent, ToolCallDetector};

pub(crate) struct StopFilter {
    inner: Box<dyn ToolCallDetector>,
    tokens: &'static [&'static str],
    held: String,
}

impl StopFilter {
    pub(crate) fn new(inner: Box<dyn ToolCallDetector>, tokens: &'static [&'static str]) -> Self {
        StopFilter {
            inner,
            tokens,
            held: String::new(),
        }
    }

    /// Could `s` (non-empty) be the end of a response made of end tokens? `Some(true)`: one or
    /// more whole tokens, each followed by whitespace only; `Some(false)`: such tokens (maybe
    /// none) and then the start of another one; `None`: no.
    fn tail(&self, s: &str) -> Option<bool> {
        let mut rest = s;
        let mut whole = false;
        loop {
            if rest.is_empty() {
                return whole.then_some(true);
            }
            if let Some(t) = self.tokens.iter().find(|t| rest.starts_with(**t)) {
                rest = rest[t.len()..].trim_start();
                whole = true;
                continue;
            }
            return self
                .tokens
                .iter()
                .any(|t| t.starts_with(rest))
                .then_some(false);
        }
    }

    /// Where the held tail starts in `held`.
    fn tail_start(&self) -> usize {
        self.held
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let s = &self.held[i..];
                self.tokens
                    .iter()
                    .any(|t| t.as_bytes()[0] == s.as_bytes()[0])
                    && self.tail(s).is_some()
            })
            .unwrap_or(self.held.len())
    }
}

impl ToolCallDetector for StopFilter {
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent> {
        self.held.push_str(chunk);
        let p = self.tail_start();
        if p == 0 {
            return Vec::new();
        }
        let pass: String = self.held.drain(..p).collect();
        self.inner.feed(&pass)
    }

    fn finish(&mut self) -> Vec<DetectorEvent> {
        let held = std::mem::take(&mut self.held);
        let mut out = Vec::new();
        // Whole tokens at the very end are dropped; an unfinished one is the model's text.
        if !held.is_empty() && self.tail(&held) != Some(true) {
            out = self.inner.feed(&held);
        }
        out.extend(self.inner.finish());
        out
    }
}
