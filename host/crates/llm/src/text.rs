//! Turning a stream of token bytes into text chunks: whole UTF-8 characters only, and stop
//! sequences cut out before anyone sees them.

/// Collects bytes and hands out complete UTF-8 characters. A token (llama.cpp) or a callback
/// (RKLLM, state WAITING) may end inside a multi-byte character; its first bytes wait here for
/// the rest.
#[derive(Debug, Default)]
pub struct Utf8Assembler {
    pending: Vec<u8>,
}

impl Utf8Assembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes; returns the text that is complete now. Invalid bytes (not merely incomplete)
    /// become U+FFFD so one bad token cannot stall the stream.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(err) => {
                    let valid = err.valid_up_to();
                    // SAFETY-free: `valid_up_to` bytes are valid UTF-8 by definition.
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match err.error_len() {
                        // Incomplete sequence at the end: keep it for the next push.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Bytes still waiting for the rest of their character.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Ends the stream: an incomplete character left over becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

/// Finds stop sequences in streamed text. Text that might be the start of a stop sequence is
/// held back until it is clear whether it is one.
#[derive(Debug, Default)]
pub struct StopScanner {
    stops: Vec<String>,
    held: String,
}

/// Result of [`StopScanner::push`].
#[derive(Debug, PartialEq, Eq)]
pub struct Scan {
    /// Text safe to show now.
    pub text: String,
    /// A stop sequence was found; everything from it on is dropped.
    pub stopped: bool,
}

impl StopScanner {
    pub fn new(stops: impl IntoIterator<Item = String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            held: String::new(),
        }
    }

    pub fn push(&mut self, chunk: &str) -> Scan {
        self.held.push_str(chunk);
        if self.stops.is_empty() {
            return Scan {
                text: std::mem::take(&mut self.held),
                stopped: false,
            };
        }
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min()
        {
            let text = self.held[..at].to_string();
            self.held.clear();
            return Scan {
                text,
                stopped: true,
            };
        }
        let keep = self.partial_suffix_len();
        let split = self.held.len() - keep;
        let text = self.held[..split].to_string();
        self.held.drain(..split);
        Scan {
            text,
            stopped: false,
        }
    }

    /// Ends the stream: held-back text was not a stop sequence after all.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Length of the longest suffix of `held` that is a proper prefix of some stop sequence.
    fn partial_suffix_len(&self) -> usize {
        let mut best = 0;
        for (start, _) in self.held.char_indices() {
            let suffix = &self.held[start..];
            if self
                .stops
                .iter()
                .any(|s| s.len() > suffix.len() && s.starts_with(suffix))
            {
                best = best.max(suffix.len());
                break; // char_indices goes from the longest suffix to the shortest
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_characters_are_joined() {
        let mut a = Utf8Assembler::new();
        let bytes = "é€😀日".as_bytes();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&a.push(std::slice::from_ref(b)));
        }
        assert_eq!(out, "é€😀日");
        assert_eq!(a.pending(), 0);
    }

    #[test]
    fn utf8_invalid_bytes_become_replacement_and_stream_continues() {
        let mut a = Utf8Assembler::new();
        assert_eq!(a.push(b"a\xFFb"), "a\u{FFFD}b");
        assert_eq!(a.push(b"\xE2\x82"), "");
        assert_eq!(a.finish(), "\u{FFFD}");
    }

    #[test]
    fn stop_sequence_across_chunks_is_cut() {
        let mut s = StopScanner::new(["</answer>".to_string()]);
        let mut shown = String::new();
        let mut stopped = false;
        for chunk in ["The answer", " is 4.</an", "swer> and more"] {
            let scan = s.push(chunk);
            shown.push_str(&scan.text);
            if scan.stopped {
                stopped = true;
                break;
            }
        }
        assert!(stopped);
        assert_eq!(shown, "The answer is 4.");
    }

    #[test]
    fn held_back_prefix_is_released_when_it_is_not_a_stop() {
        let mut s = StopScanner::new(["STOP".to_string()]);
        assert_eq!(s.push("abc ST").text, "abc ");
        assert_eq!(s.push("ART").text, "START");
        assert_eq!(s.push("ST").text, "");
        assert_eq!(s.finish(), "ST");
    }

    #[test]
    fn earliest_of_several_stops_wins() {
        let mut s = StopScanner::new(["B".to_string(), "A".to_string()]);
        assert_eq!(
            s.push("xxAyyB"),
            Scan {
                text: "xx".into(),
                stopped: true
            }
        );
    }
}
