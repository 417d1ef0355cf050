//! The streaming detector of an inferred format: text until the opener, then the block parser
//! re-run on the block seen so far until it decides. Wrapped like the modules' detectors in the
//! reasoning splitter and the end-of-turn filter.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use super::parse::{Step, block};
use super::{InferredFormat, Markers};
use crate::detect::reasoning::ReasoningSplitter;
use crate::detect::stop::StopFilter;
use crate::detect::{Ids, Setup, push_text};
use crate::parse::Parsed;
use crate::scan::{find_first, held_suffix};
use crate::{DetectorEvent, DetectorOptions, ToolCallDetector};

/// The shared wrappers take `'static` markers (the modules' are constants). Inferred markers are
/// interned: each distinct marker text is leaked once per process, so building detectors for
/// every turn does not grow memory.
fn intern(s: &str) -> &'static str {
    static SEEN: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(s) = seen.get(s) {
        return s;
    }
    let leaked: &'static str = Box::leak(s.to_string().into_boxed_str());
    seen.insert(leaked);
    leaked
}

/// Interned slices of interned strings, for the same reason as [`intern`].
fn intern_list(items: &[&'static str]) -> &'static [&'static str] {
    static SEEN: OnceLock<Mutex<HashSet<&'static [&'static str]>>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(s) = seen.get(items) {
        return s;
    }
    let leaked: &'static [&'static str] = Box::leak(items.to_vec().into_boxed_slice());
    seen.insert(leaked);
    leaked
}

type Pairs = &'static [(&'static str, &'static str)];

/// The reasoning markers of `f`: `r`, and `r` opened after the message's own open marker (the
/// model writes that marker, then its reasoning).
pub(super) fn static_pairs(f: &InferredFormat, r: &Markers) -> Pairs {
    static SEEN: OnceLock<Mutex<HashSet<Pairs>>> = OnceLock::new();
    let mut pairs = vec![(intern(&r.open), intern(&r.close))];
    if !f.message_open.is_empty() {
        let open = format!("{}{}", f.message_open, r.open);
        pairs.push((intern(&open), intern(&r.close)));
    }
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(s) = seen.get(&pairs[..]) {
        return s;
    }
    let leaked: Pairs = Box::leak(pairs.into_boxed_slice());
    seen.insert(leaked);
    leaked
}

pub(super) fn build(f: &InferredFormat, opts: &DetectorOptions) -> Box<dyn ToolCallDetector> {
    let setup = Setup {
        schemas: Arc::new(opts.schemas.clone()),
    };
    let mut det: Box<dyn ToolCallDetector> = Box::new(InferredDetector::new(f.clone(), &setup));
    if let Some(r) = &f.reasoning {
        // A call section that starts inside an unclosed reasoning block ends it (Kimi K2
        // thinking); an opener as common as `[` cannot say so.
        let ends: &'static [&'static str] = if f.anchored {
            &[]
        } else {
            intern_list(&[intern(&trigger(f))])
        };
        det = Box::new(ReasoningSplitter::new(
            det,
            static_pairs(f, r),
            ends,
            opts.reasoning_open,
        ));
    }
    let ends: Vec<&'static str> = f
        .end_of_turn
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| intern(t))
        .collect();
    if ends.is_empty() {
        return det;
    }
    Box::new(StopFilter::new(det, intern_list(&ends)))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Anchored formats: nothing but whitespace seen yet.
    Start,
    Text,
    Block,
    /// A failed block: held until its end (the close marker, the next opener or the end of
    /// the response) so the whole attempt is reported.
    Failed {
        committed: bool,
    },
    /// Anchored formats after the start: the rest is text.
    Rest,
}

/// Detector for one [`InferredFormat`] (without the reasoning and end-of-turn wrappers; build
/// it with [`InferredFormat::detector`]).
pub struct InferredDetector {
    format: InferredFormat,
    /// What is searched for in the text: the opener's first token.
    trigger: String,
    /// Stray close markers dropped from the text.
    hidden: Vec<String>,
    buf: String,
    state: State,
    error: String,
    ids: Ids,
}

impl InferredDetector {
    fn new(format: InferredFormat, setup: &Setup) -> Self {
        let trigger = trigger(&format);
        // Close markers of their own (special tokens) left outside a call are hidden, as the
        // modules hide a stray `</tool_call>`.
        let mut hidden: Vec<String> = [&format.call_close, &format.section_close]
            .into_iter()
            .map(|m| search_token(&format, m, &first_token(m)))
            .filter(|t| t.len() >= 3 && t.starts_with(['<', '[']) && *t != trigger)
            .collect();
        // The message's frame is the model's markup, not its words.
        if !format.message_open.is_empty() {
            hidden.push(format.message_open.clone());
        }
        let mut ids = Ids::new(setup);
        if let super::CallSyntax::Named {
            arguments: super::Arguments::Pairs { verbatim: true, .. },
            ..
        } = &format.call
        {
            ids = ids.with_verbatim_values();
        }
        let state = if format.anchored {
            State::Start
        } else {
            State::Text
        };
        InferredDetector {
            format,
            trigger,
            hidden,
            buf: String::new(),
            state,
            error: String::new(),
            ids,
        }
    }

    /// What ends a block: the section's close marker, else the call's (its first token).
    fn close_token(&self) -> String {
        let close = if !self.format.section_open.is_empty() && !self.format.section_close.is_empty()
        {
            &self.format.section_close
        } else {
            &self.format.call_close
        };
        let token = close.split_whitespace().next().unwrap_or("");
        let token = token.split(super::WILDCARD).next().unwrap_or(token);
        search_token(&self.format, close, token)
    }

    /// Where a failed block ends: after the closing marker, else at the next opener.
    fn failed_end(&self, eof: bool) -> Option<usize> {
        if self.format.anchored {
            // The block is the whole message: its opener (`[`, `{`) also appears in values.
            return eof.then_some(self.buf.len());
        }
        let from = self.trigger.len().min(self.buf.len());
        let token = self.close_token();
        // The earliest of the two, so the end does not depend on how much text has arrived.
        let closed = (!token.is_empty())
            .then(|| {
                self.buf[from..]
                    .find(&token)
                    .map(|p| from + p + token.len())
            })
            .flatten();
        let next = self.buf[from..].find(&self.trigger).map(|p| from + p);
        match (closed, next) {
            (Some(c), Some(n)) => Some(c.min(n)),
            (Some(e), None) | (None, Some(e)) => Some(e),
            (None, None) => eof.then_some(self.buf.len()),
        }
    }

    fn run(&mut self, eof: bool) -> Vec<DetectorEvent> {
        let mut out = Vec::new();
        loop {
            match self.state {
                State::Start => {
                    let t = self.buf.trim_start();
                    if t.is_empty() && !eof {
                        return out;
                    }
                    if t.starts_with(&self.trigger) {
                        let ws = self.buf.len() - t.len();
                        push_text(&mut out, &self.buf[..ws]);
                        self.buf.drain(..ws);
                        self.state = State::Block;
                    } else if !eof && self.trigger.starts_with(t) {
                        return out;
                    } else {
                        self.state = State::Rest;
                    }
                }
                State::Rest => {
                    push_text(&mut out, &self.buf);
                    self.buf.clear();
                    return out;
                }
                State::Text => {
                    let mut markers = vec![self.trigger.as_str()];
                    markers.extend(self.hidden.iter().map(String::as_str));
                    if let Some((p, i)) = find_first(&self.buf, &markers) {
                        push_text(&mut out, &self.buf[..p]);
                        if i > 0 {
                            self.buf.drain(..p + markers[i].len());
                            continue;
                        }
                        self.buf.drain(..p);
                        self.state = State::Block;
                        continue;
                    }
                    let keep = if eof {
                        0
                    } else {
                        held_suffix(&self.buf, &markers)
                    };
                    let emit = self.buf.len() - keep;
                    push_text(&mut out, &self.buf[..emit]);
                    self.buf.drain(..emit);
                    return out;
                }
                State::Block => match block(&self.format, &self.buf, eof) {
                    Step::NeedMore => return out,
                    Step::Done { len, items } => {
                        self.ids.events(items, &mut out);
                        self.buf.drain(..len);
                        self.state = self.after_block();
                    }
                    Step::Fail { error, committed } => {
                        self.error = error;
                        self.state = State::Failed { committed };
                    }
                },
                State::Failed { committed } => {
                    let Some(end) = self.failed_end(eof) else {
                        return out;
                    };
                    let raw: String = self.buf.drain(..end).collect();
                    // The message is read from the whole attempt, not from however much text
                    // had arrived when the parser gave up (that depends on the chunking).
                    let (error, committed) = match block(&self.format, &raw, true) {
                        Step::Fail { error, committed } => (error, committed),
                        _ => (std::mem::take(&mut self.error), committed),
                    };
                    self.error.clear();
                    // A marker quoted in prose (no call begun, no close marker after it) is
                    // the answer's text; one that was closed is a malformed call.
                    let after = &raw[self.trigger.len().min(raw.len())..];
                    let close = self.close_token();
                    let closed = !close.is_empty() && after.contains(&close);
                    let structured = after.trim_start().starts_with(['{', '[', '<', '(', '"']);
                    if committed || (!self.format.anchored && (closed || structured)) {
                        self.ids.events(vec![Parsed::Bad { raw, error }], &mut out);
                    } else {
                        push_text(&mut out, &raw);
                    }
                    self.state = self.after_block();
                }
            }
            if eof && self.buf.is_empty() {
                return out;
            }
        }
    }

    fn after_block(&self) -> State {
        if self.format.anchored {
            State::Rest
        } else {
            State::Text
        }
    }
}

impl ToolCallDetector for InferredDetector {
    fn feed(&mut self, chunk: &str) -> Vec<DetectorEvent> {
        self.buf.push_str(chunk);
        self.run(false)
    }

    fn finish(&mut self) -> Vec<DetectorEvent> {
        let out = self.run(true);
        self.buf.clear();
        self.state = if self.format.anchored {
            State::Start
        } else {
            State::Text
        };
        out
    }
}

/// The part of a marker searched for in text: up to its first whitespace or wildcard, and for a
/// marker that starts with a special token, that token (`[TOOL_CALLS]` of `[TOOL_CALLS][`), so
/// whitespace the model puts after it still opens the call.
fn first_token(marker: &str) -> String {
    let t = marker.split_whitespace().next().unwrap_or("");
    let t = t.split(super::WILDCARD).next().unwrap_or(t);
    let close = match t.chars().next() {
        Some('<') => '>',
        Some('[') => ']',
        _ => return t.to_string(),
    };
    match t.find(close) {
        Some(e) => t[..e + close.len_utf8()].to_string(),
        None => t.to_string(),
    }
}

/// `token` (the start of `marker` searched for in text), or where other markers of the format
/// start with the same token (`<|open|>tools<|sep|>` and `<|open|>think<|sep|>`,
/// `<｜DSML｜ calls>` and `<｜DSML｜ invoke`), the token with the word after it that tells them
/// apart: the token alone would find every marker of the family.
fn search_token(f: &InferredFormat, marker: &str, token: &str) -> String {
    let t = first_token(marker);
    if t.is_empty() || token != t {
        return token.to_string();
    }
    let own = named_token(marker, &t);
    let mut others = vec![
        f.section_open.as_str(),
        &f.section_close,
        &f.call_open,
        &f.call_close,
        &f.call_separator,
        &f.message_open,
    ];
    if let Some(r) = &f.reasoning {
        others.extend([r.open.as_str(), &r.close]);
    }
    if let super::CallSyntax::Named {
        name_suffix,
        arguments,
        arguments_close,
    } = &f.call
    {
        others.extend([name_suffix.as_str(), arguments_close]);
        if let super::Arguments::Pairs {
            key_prefix,
            key_suffix,
            value_suffix,
            separator,
            ..
        } = arguments
        {
            others.extend([key_prefix.as_str(), key_suffix, value_suffix, separator]);
        }
    }
    others.extend(f.end_of_turn.iter().map(String::as_str));
    let shared = others
        .iter()
        .any(|m| first_token(m) == t && named_token(m, &t) != own);
    if shared { own } else { t }
}

/// `token` (which starts `marker`) with what names it: whitespace, a word, then the `>` that
/// closes the tag or a special token right after the word (`<|open|>tools<|sep|>`).
fn named_token(marker: &str, token: &str) -> String {
    let rest = &marker[token.len()..];
    let word_at = rest.len() - rest.trim_start().len();
    let word_len = rest[word_at..]
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len() - word_at);
    if word_len == 0 {
        return token.to_string();
    }
    let mut end = word_at + word_len;
    let after = &rest[end..];
    if after.starts_with('>') {
        end += 1;
    } else if after.starts_with('<')
        && let Some(gt) = after.find('>')
        && !after[..gt].contains(char::is_whitespace)
        && !after[..gt].contains(super::WILDCARD)
    {
        end += gt + 1;
    }
    format!("{token}{}", &rest[..end])
}

/// What starts a call block in the text.
pub(super) fn trigger(f: &InferredFormat) -> String {
    let opener = f.opener();
    if opener.trim().is_empty() {
        // A JSON call object with no marker before it.
        "{".to_string()
    } else {
        search_token(f, opener, &first_token(opener))
    }
}
