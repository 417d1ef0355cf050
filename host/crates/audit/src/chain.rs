//! The hash chain that makes the audit log tamper-evident.
//!
//! Every line ends with two fields rkmcp adds last, in this order:
//!
//! ```text
//! {"time":"…","kind":"…",…,"prev":"<64 hex>","chain":"<64 hex>"}
//! ```
//!
//! `chain` is the hex SHA-256 of the previous line's `chain` value followed by this line's
//! content: the line exactly as written, without `"chain"` (so `prev` is covered by the hash).
//! `prev` repeats the previous line's `chain`, so a check can tell a changed line (its hash no
//! longer matches its content) from a removed or moved one (the line is whole, but its link does
//! not follow the line before it). The first line of a new log links to [`GENESIS`].
//!
//! rkmcp itself writes a few records of kind `audit_chain`: `start` (a new log), `rotated` (the
//! first line of a file after rotation, linked to the last line of the rotated file) and
//! `restart` (the log's last line could not be continued — torn by an interrupted write, written
//! before chaining, damaged — with the `reason`; linked to [`GENESIS`]).
//!
//! The hash needs no key: someone who can write the file can also recompute the whole chain
//! after changing it. What the chain catches is every change that does not: an edited, removed,
//! inserted or reordered line. Removing lines from the end of the newest file is not visible
//! either; note the last `chain` value elsewhere to anchor it.
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// What the first line of a new log links to.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The `kind` of the records rkmcp writes about the chain itself.
pub const KIND: &str = "audit_chain";

const PREV_KEY: &[u8] = b",\"prev\":\"";
const CHAIN_KEY: &[u8] = b"\",\"chain\":\"";
const HASH_LEN: usize = 64;
/// `,"prev":"…","chain":"…"}`: what sealing adds in place of the closing brace.
const SUFFIX_LEN: usize = PREV_KEY.len() + HASH_LEN + CHAIN_KEY.len() + HASH_LEN + 2;
/// How many bytes a sealed line is longer than its content.
pub const SEAL_OVERHEAD: usize = SUFFIX_LEN - 1;

/// The chain value of a line: hex SHA-256 over `prev` and `body` followed by `}`, where `body`
/// is the line up to its `,"chain"`: together the line without its chain field.
fn link(prev: &[u8], body: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(prev);
    hash.update(body);
    hash.update(b"}");
    hex(&hash.finalize())
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

fn is_hash(bytes: &[u8]) -> bool {
    bytes.len() == HASH_LEN && bytes.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Seals `content` (a non-empty JSON object's text) into a line linked to `prev`; returns the
/// line (without its newline) and its chain value.
pub fn seal(content: &[u8], prev: &str) -> (Vec<u8>, String) {
    let open = content.strip_suffix(b"}").unwrap_or(content);
    let mut line = Vec::with_capacity(open.len() + SUFFIX_LEN);
    line.extend_from_slice(open);
    line.extend_from_slice(PREV_KEY);
    line.extend_from_slice(prev.as_bytes());
    line.push(b'"');
    let chain = link(prev.as_bytes(), &line);
    line.extend_from_slice(&CHAIN_KEY[1..]);
    line.extend_from_slice(chain.as_bytes());
    line.extend_from_slice(b"\"}");
    (line, chain)
}

/// One line of the log, as read back.
#[derive(Debug, PartialEq)]
pub enum Line<'a> {
    Chained {
        /// The line up to `,"chain":"…"}`: with a closing brace, the line without its chain.
        body: &'a [u8],
        prev: &'a str,
        chain: &'a str,
    },
    /// A JSON object without chain fields: written before chaining.
    Unchained,
    /// Not an entry rkmcp wrote as it is: why.
    Damaged(&'static str),
}

impl Line<'_> {
    pub fn parse(line: &[u8]) -> Line<'_> {
        if let Some(start) = line.len().checked_sub(SUFFIX_LEN) {
            let suffix = &line[start..];
            let prev_at = PREV_KEY.len();
            let chain_at = prev_at + HASH_LEN + CHAIN_KEY.len();
            if suffix.starts_with(PREV_KEY)
                && is_hash(&suffix[prev_at..prev_at + HASH_LEN])
                && suffix[prev_at + HASH_LEN..].starts_with(CHAIN_KEY)
                && is_hash(&suffix[chain_at..chain_at + HASH_LEN])
                && &suffix[chain_at + HASH_LEN..] == b"\"}"
            {
                // Hex digits are ASCII: these never fail.
                let text =
                    |r: std::ops::Range<usize>| std::str::from_utf8(&suffix[r]).unwrap_or("");
                return Line::Chained {
                    body: &line[..start + prev_at + HASH_LEN + 1],
                    prev: text(prev_at..prev_at + HASH_LEN),
                    chain: text(chain_at..chain_at + HASH_LEN),
                };
            }
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(map)) if map.contains_key("chain") || map.contains_key("prev") => {
                Line::Damaged("its chain fields are not as rkmcp writes them")
            }
            Ok(Value::Object(_)) => Line::Unchained,
            _ if line.is_empty() => Line::Damaged("it is empty"),
            _ => Line::Damaged("it is not a JSON entry"),
        }
    }
}

/// Whether a chained line's hash matches its content and `prev`.
pub fn intact(body: &[u8], prev: &str, chain: &str) -> bool {
    link(prev.as_bytes(), body) == chain
}

/// A record rkmcp writes about the chain itself: `{"time":…,"kind":"audit_chain","event":…}`.
pub fn marker(event: &str, reason: Option<&str>) -> String {
    let mut entry = Map::new();
    entry.insert("time".into(), super::timestamp().into());
    entry.insert("kind".into(), KIND.into());
    entry.insert("event".into(), event.into());
    if let Some(reason) = reason {
        entry.insert("reason".into(), reason.into());
    }
    Value::Object(entry).to_string()
}

/// What the end of an existing log file says about how to continue it.
#[derive(Debug, PartialEq)]
pub enum Tail {
    /// Nothing in it: a new chain starts.
    Empty,
    /// Its last line's chain value: the next line links to it.
    Chained(String),
    /// The last line cannot be continued: a new chain starts with a `restart` record giving
    /// `reason`. `torn`: the file does not end with a newline, which must be written first.
    Broken { reason: String, torn: bool },
}

/// Reads the last line of `file` (`len` bytes long), backwards in chunks: opening a large log
/// costs one line's read, not the file's.
pub fn read_tail(file: &File, len: u64, path: &Path) -> Tail {
    if len == 0 {
        return Tail::Empty;
    }
    match last_line(file, len) {
        Err(err) => Tail::Broken {
            reason: format!("could not read the end of {}: {err}", path.display()),
            torn: false,
        },
        Ok((line, torn)) if torn => Tail::Broken {
            reason: format!(
                "the last line of {} is incomplete ({} bytes without a line end): a write was interrupted",
                path.display(),
                line.len()
            ),
            torn,
        },
        Ok((line, _)) => match Line::parse(&line) {
            Line::Chained { chain, .. } => Tail::Chained(chain.to_string()),
            Line::Unchained => Tail::Broken {
                reason: format!(
                    "the last line of {} has no chain: it was written before chaining",
                    path.display()
                ),
                torn: false,
            },
            Line::Damaged(why) => Tail::Broken {
                reason: format!(
                    "the last line of {} cannot be continued: {why}",
                    path.display()
                ),
                torn: false,
            },
        },
    }
}

/// The last line without its newline, and whether it lacked one.
fn last_line(file: &File, len: u64) -> std::io::Result<(Vec<u8>, bool)> {
    const CHUNK: u64 = 64 * 1024;
    let mut tail: Vec<u8> = Vec::new();
    let mut end = len;
    let mut torn = None;
    loop {
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0; (end - start) as usize];
        file.read_exact_at(&mut chunk, start)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        let torn = *torn.get_or_insert(tail.last() != Some(&b'\n'));
        let content_end = if torn { tail.len() } else { tail.len() - 1 };
        if let Some(nl) = tail[..content_end].iter().rposition(|&b| b == b'\n') {
            return Ok((tail[nl + 1..content_end].to_vec(), torn));
        }
        if start == 0 {
            tail.truncate(content_end);
            return Ok((tail, torn));
        }
        end = start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_line_is_json_and_its_hash_covers_content_and_link() {
        let (line, chain) = seal(br#"{"kind":"x","n":1}"#, GENESIS);
        let entry: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(entry["prev"], GENESIS);
        assert_eq!(entry["chain"], chain.as_str());
        assert_eq!(entry["n"], 1);
        let Line::Chained { body, prev, chain } = Line::parse(&line) else {
            panic!("not chained: {}", String::from_utf8_lossy(&line));
        };
        assert!(intact(body, prev, chain));
        // The documented recipe: sha256(prev ‖ the line without its chain field).
        let mut without_chain = body.to_vec();
        without_chain.push(b'}');
        let mut hash = Sha256::new();
        hash.update(GENESIS.as_bytes());
        hash.update(&without_chain);
        assert_eq!(hex(&hash.finalize()), chain);
        // Changing one byte of the content, or the link, breaks it.
        let edited = String::from_utf8(line.clone())
            .unwrap()
            .replace("\"n\":1", "\"n\":2");
        let Line::Chained { body, prev, chain } = Line::parse(edited.as_bytes()) else {
            panic!()
        };
        assert!(!intact(body, prev, chain));
        let (next, _) = seal(br#"{"n":2}"#, chain);
        let relinked = String::from_utf8(next).unwrap().replace(chain, GENESIS);
        let Line::Chained { body, prev, chain } = Line::parse(relinked.as_bytes()) else {
            panic!()
        };
        assert!(!intact(body, prev, chain));
    }

    #[test]
    fn lines_without_chain_and_damaged_lines_are_told_apart() {
        assert_eq!(Line::parse(br#"{"kind":"old"}"#), Line::Unchained);
        assert!(matches!(Line::parse(b"{\"kind\":\"ol"), Line::Damaged(_)));
        assert!(matches!(Line::parse(b""), Line::Damaged(_)));
        // Reformatted by a tool: the fields are there, but not as written.
        let (line, _) = seal(br#"{"n":1}"#, GENESIS);
        let pretty: Value = serde_json::from_slice(&line).unwrap();
        let pretty = serde_json::to_string_pretty(&pretty).unwrap();
        assert!(matches!(Line::parse(pretty.as_bytes()), Line::Damaged(_)));
    }

    #[test]
    fn the_tail_is_read_backwards_and_a_torn_line_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        let (first, _) = seal(br#"{"n":1}"#, GENESIS);
        let (second, chain) = seal(
            format!(r#"{{"big":"{}"}}"#, "x".repeat(200_000)).as_bytes(),
            GENESIS,
        );
        let mut text = first.clone();
        text.push(b'\n');
        text.extend_from_slice(&second);
        text.push(b'\n');
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        assert_eq!(
            read_tail(&file, text.len() as u64, &path),
            Tail::Chained(chain)
        );

        text.extend_from_slice(b"{\"half");
        std::fs::write(&path, &text).unwrap();
        let file = File::open(&path).unwrap();
        let Tail::Broken { reason, torn } = read_tail(&file, text.len() as u64, &path) else {
            panic!()
        };
        assert!(torn && reason.contains("incomplete"), "{reason}");

        std::fs::write(&path, b"{\"kind\":\"old\"}\n").unwrap();
        let file = File::open(&path).unwrap();
        let Tail::Broken { reason, torn } = read_tail(&file, 15, &path) else {
            panic!()
        };
        assert!(!torn && reason.contains("before chaining"), "{reason}");
    }
}
