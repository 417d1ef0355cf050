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

/// A block whose start marker opens the buffer, and how much of its body was already searched
/// for the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Open {
    block: usize,
    scanned: usize,
}

/// The block scanning both [`MarkerDetector`] and the whole-message detector's tags use: text
/// streams until a block start, then the block is held until its end.
pub(crate) struct Blocks {
    blocks: &'static [Block],
    /// Block start markers, then the stray markers that are hidden from the text.
    starts: Vec<&'static str>,
}

impl Blocks {
    /// `hidden`: markers dropped where they appear outside a block.
    pub(crate) fn new(blocks: &'static [Block], hidden: &'static [&'static str]) -> Self {
        Blocks {
            blocks,
            starts: blocks
                .iter()
                .map(|b| b.start)
                .chain(hidden.iter().copied())
                .collect(),
        }
    }

    /// Streams the text of `buf` up to the first block start. Returns the block that now opens
    /// `buf`, or `None` once the rest is emitted except a suffix that could still grow into a
    /// marker (nothing is held at `eof`).
    pub(crate) fn text(
        &self,
        buf: &mut String,
        eof: bool,
        out: &mut Vec<DetectorEvent>,
    ) -> Option<Open> {
        loop {
            if let Some((p, bi)) = find_first(buf, &self.starts) {
                push_text(out, &buf[..p]);
                if bi >= self.blocks.len() {
                    buf.drain(..p + self.starts[bi].len());
                    continue;
                }
                buf.drain(..p);
                return Some(Open {
                    block: bi,
                    scanned: 0,
                });
            }
            let keep = if eof {
                0
            } else {
                held_suffix(buf, &self.starts)
            };
            let emit = buf.len() - keep;
            push_text(out, &buf[..emit]);
            buf.drain(..emit);
            return None;
        }
    }

    /// Looks for the end of the `open` block at the start of `buf`. True when the block is done:
    /// its events are out and it is drained from `buf` (at `eof` a block without an end is
    /// parsed as cut off and `buf` emptied). False while it waits for more input.
    pub(crate) fn block(
        &self,
        open: &mut Open,
        buf: &mut String,
        eof: bool,
        ids: &mut Ids,
        out: &mut Vec<DetectorEvent>,
    ) -> bool {
        let b = &self.blocks[open.block];
        let body = &buf[b.start.len()..];
        let found = match &b.end {
            End::Finder { find, closers } => {
                let new = &body[floor_boundary(body, open.scanned)..];
                if open.scanned == 0
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
                let parsed = (b.parse)(&buf[..total], &body[..inner_end], true);
                ids.events(parsed, out);
                buf.drain(..total);
                true
            }
            None if eof => {
                let parsed = (b.parse)(buf, body, false);
                ids.events(parsed, out);
                buf.clear();
                true
            }
            None => {
                open.scanned = body.len();
                false
            }
        }
    }
}

enum State {
    Text,
    InBlock(Open),
}

pub(crate) struct MarkerDetector {
    blocks: Blocks,
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
            blocks: Blocks::new(blocks, hidden),
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
            match &mut self.state {
                State::Text => match self.blocks.text(&mut self.buf, eof, &mut out) {
                    Some(open) => self.state = State::InBlock(open),
                    None => break,
                },
                State::InBlock(open) => {
                    if !self
                        .blocks
                        .block(open, &mut self.buf, eof, &mut self.ids, &mut out)
                    {
                        break;
                    }
                    self.state = State::Text;
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
