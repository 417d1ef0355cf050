//! Detector for formats whose calls are blocks opened by a start marker.

use super::{Ids, Setup, push_text};
use crate::DetectorEvent;
use crate::parse::Parsed;
use crate::scan::{find_first, floor_boundary, held_suffix};

/// Parses one block: `raw` is the whole block text (markers included), `inner` the part between
/// the start marker and the end marker, `terminated` false when the response ended first.
pub(crate) type ParseFn = fn(raw: &str, inner: &str, terminated: bool) -> Vec<Parsed>;

#[derive(Clone, Copy)]
pub(crate) enum End {
    // No "first marker" kind: every block body can quote its own end marker in a value, so
    // each format's finder says where an end can really be.
    /// A function finds the end: returns `(inner_len, consumed_len)` measured from the end of the
    /// start marker. It is only re-run when a chunk brings one of `closers`, since the end can
    /// only be completed by such a character; empty `closers` means re-run on every chunk.
    Finder {
        find: fn(&str) -> Option<(usize, usize)>,
        closers: &'static str,
    },
}

#[derive(Clone, Copy)]
pub(crate) struct Block {
    pub start: &'static str,
    pub end: End,
    pub parse: ParseFn,
}

enum State {
    Text,
    InBlock { block: usize, scanned: usize },
}

pub(crate) struct MarkerDetector {
    blocks: &'static [Block],
    /// Block start markers, then the stray markers that are hidden from the text.
    starts: Vec<&'static str>,
    buf: String,
    state: State,
    ids: Ids,
}

impl MarkerDetector {
    /// `hidden`: markers that are dropped where they appear outside a block. They are special
    /// tokens of the model (a stray `</tool_call>` after a call whose close tag came late), never
    /// something the user should read.
    pub(crate) fn new(
        blocks: &'static [Block],
        hidden: &'static [&'static str],
        setup: &Setup,
    ) -> Self {
        MarkerDetector {
            blocks,
            starts: blocks
                .iter()
                .map(|b| b.start)
                .chain(hidden.iter().copied())
                .collect(),
            buf: String::new(),
            state: State::Text,
            ids: Ids::new(setup),
        }
    }

    /// The format writes text values without newline padding (kept verbatim).
    pub(crate) fn with_verbatim_values(mut self) -> Self {
        self.ids = self.ids.with_verbatim_values();
        self
    }

    /// The format escapes `<`, `>` and `&` in text values as XML entities.
    pub(crate) fn with_entities(mut self) -> Self {
        self.ids = self.ids.with_entities();
        self
    }

    fn run(&mut self, eof: bool) -> Vec<DetectorEvent> {
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Text => {
                    if let Some((p, bi)) = find_first(&self.buf, &self.starts) {
                        push_text(&mut out, &self.buf[..p]);
                        if bi >= self.blocks.len() {
                            self.buf.drain(..p + self.starts[bi].len());
                            continue;
                        }
                        self.buf.drain(..p);
                        self.state = State::InBlock {
                            block: bi,
                            scanned: 0,
                        };
                        continue;
                    }
                    let keep = if eof {
                        0
                    } else {
                        held_suffix(&self.buf, &self.starts)
                    };
                    let emit = self.buf.len() - keep;
                    push_text(&mut out, &self.buf[..emit]);
                    self.buf.drain(..emit);
                    break;
                }
                State::InBlock { block, scanned } => {
                    let b = &self.blocks[block];
                    let body = &self.buf[b.start.len()..];
                    let found = match &b.end {
                        End::Finder { find, closers } => {
                            let new = &body[floor_boundary(body, scanned)..];
                            if scanned == 0
                                || closers.is_empty()
                                || new.contains(|c: char| closers.contains(c))
                            {
                                find(body)
                            } else {
                                None
                            }
                        }
                    };
                    match found {
                        Some((inner_end, consumed)) => {
                            let total = b.start.len() + consumed;
                            let parsed = (b.parse)(&self.buf[..total], &body[..inner_end], true);
                            self.ids.events(parsed, &mut out);
                            self.buf.drain(..total);
                            self.state = State::Text;
                        }
                        None if eof => {
                            let parsed = (b.parse)(&self.buf, body, false);
                            self.ids.events(parsed, &mut out);
                            self.buf.clear();
                            self.state = State::Text;
                            break;
                        }
                        None => {
                            self.state = State::InBlock {
                                block,
                                scanned: body.len(),
                            };
                            break;
                        }
                    }
                }
            }
        }
        out
    }
}

impl crate::ToolCallDetector for MarkerDetector {
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent> {
        self.buf.push_str(chunk);
        self.run(false)
    }

    fn finish(&mut self) -> Vec<DetectorEvent> {
        self.run(true)
    }
}
