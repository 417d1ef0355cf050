//! Newline-delimited JSON-RPC framing for stdio servers, as pure functions over bytes.
//!
//! rmcp's own framing drops what it cannot read (a malformed line, invalid UTF-8, a line over its
//! size cap) with at most a debug log, so the request it answered waits out its timeout and the
//! user is told only "timed out". Here every unreadable line becomes an [`Unreadable`] that names
//! what was wrong and keeps a shortened, printable copy of the line, and the JSON-RPC `id` is dug
//! out of it where it can be (even from a line cut off half-way), so the caller can fail the
//! matching request at once.
//!
//! A line longer than the limit is never buffered whole: [`LineReader`] keeps its first
//! [`HEAD_BYTES`] and last [`TAIL_BYTES`] (an `id` is near one end: rmcp and the Python SDK write
//! it first, the TypeScript SDK last) and discards the rest as it streams past.
use rmcp::RoleClient;
use rmcp::model::{NumberOrString, RequestId};
use rmcp::service::RxJsonRpcMessage;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// Bytes kept from the start of an oversize line.
pub const HEAD_BYTES: usize = 4096;
/// Bytes kept from the end of an oversize line.
pub const TAIL_BYTES: usize = 512;
/// Characters of an unreadable line shown in an error.
const SHOWN_CHARS: usize = 160;

/// One line read from the server.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A whole line without its `\n` (and `\r`).
    Line(Vec<u8>),
    /// A line longer than the limit: its size and both ends.
    Oversize {
        len: usize,
        head: Vec<u8>,
        tail: Vec<u8>,
    },
}

/// Reads lines of at most `max_len` bytes; longer lines are reported, not buffered.
pub struct LineReader<R> {
    read: R,
    max_len: usize,
    line: Vec<u8>,
    /// Set while streaming past an oversize line.
    oversize: Option<(usize, Vec<u8>)>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(read: R, max_len: usize) -> Self {
        LineReader {
            read,
            max_len,
            line: Vec::new(),
            oversize: None,
        }
    }

    /// The next line, or `None` at end of stream. A last line without `\n` counts as a line.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                if let Some((len, tail)) = self.oversize.take() {
                    return Ok(Some(self.finish_oversize(len, tail)));
                }
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Frame::Line(trim_cr(std::mem::take(&mut self.line)))));
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let chunk = &available[..newline.unwrap_or(available.len())];
            let consumed = newline.map_or(available.len(), |i| i + 1);
            match &mut self.oversize {
                Some((len, tail)) => {
                    *len += chunk.len();
                    keep_tail(tail, chunk);
                }
                None if self.line.len() + chunk.len() > self.max_len => {
                    let mut tail = Vec::new();
                    keep_tail(&mut tail, &self.line);
                    keep_tail(&mut tail, chunk);
                    let len = self.line.len() + chunk.len();
                    // The head is what the line started with.
                    let room = HEAD_BYTES.saturating_sub(self.line.len());
                    self.line.extend_from_slice(&chunk[..room.min(chunk.len())]);
                    self.line.truncate(HEAD_BYTES);
                    self.oversize = Some((len, tail));
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.read.consume(consumed);
            if newline.is_some() {
                return Ok(Some(match self.oversize.take() {
                    Some((len, tail)) => self.finish_oversize(len, tail),
                    None => Frame::Line(trim_cr(std::mem::take(&mut self.line))),
                }));
            }
        }
    }

    fn finish_oversize(&mut self, len: usize, tail: Vec<u8>) -> Frame {
        Frame::Oversize {
            len,
            head: std::mem::take(&mut self.line),
            tail,
        }
    }
}

fn keep_tail(tail: &mut Vec<u8>, more: &[u8]) {
    tail.extend_from_slice(&more[more.len().saturating_sub(TAIL_BYTES)..]);
    if tail.len() > TAIL_BYTES {
        tail.drain(..tail.len() - TAIL_BYTES);
    }
}

fn trim_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

/// A line that is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// What is wrong, for a person ("is not valid JSON (expected `,` or `}` at column 17)").
    pub reason: String,
    /// Set for a line over the size limit: the limit, as shown.
    pub oversize: Option<String>,
    /// The line, shortened and with control characters escaped.
    pub shown: String,
    /// The request it answers, when that could be found.
    pub id: Option<RequestId>,
}

/// What a line turned out to be.
#[derive(Debug)]
pub enum Decoded {
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// Blank lines, and notifications outside MCP (some servers share stdout with other
    /// protocols): skipped, as the other SDKs do.
    Skip,
    Unreadable(Unreadable),
}

/// Decodes one line from a server.
pub fn decode_line(line: &[u8]) -> Decoded {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Skip;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(err) => {
            return Decoded::Unreadable(Unreadable {
                reason: format!("is not valid UTF-8 (at byte {})", err.valid_up_to()),
                oversize: None,
                shown: shorten(line),
                id: find_id(line),
            });
        }
    };
    // Only a tool list can carry `taskSupport`; other lines are read once, straight.
    if text.contains("\"taskSupport\"")
        && let Ok(mut value) = serde_json::from_str::<serde_json::Value>(text)
    {
        super::decode::keep_task_support(&mut value);
        if let Ok(message) = serde_json::from_value::<RxJsonRpcMessage<RoleClient>>(value) {
            return Decoded::Message(Box::new(message));
        }
    }
    match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(text) {
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(err) => {
            let value = serde_json::from_str::<serde_json::Value>(text).ok();
            if let Some(value) = &value
                && is_foreign_notification(value)
            {
                return Decoded::Skip;
            }
            let reason = match &value {
                Some(_) => format!("is not a JSON-RPC message MCP knows ({err})"),
                None => format!("is not valid JSON ({err})"),
            };
            let id = match &value {
                Some(v) => v.get("id").and_then(json_id),
                None => find_id(line),
            };
            Decoded::Unreadable(Unreadable {
                reason,
                oversize: None,
                shown: shorten(line),
                id,
            })
        }
    }
}

/// A notification whose method MCP does not define (LSP-style chatter, vendor extensions):
/// ignored rather than reported, as rmcp and the other SDKs do.
fn is_foreign_notification(value: &serde_json::Value) -> bool {
    value.get("id").is_none()
        && value
            .get("method")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|m| !STANDARD_NOTIFICATIONS.contains(&m))
}

const STANDARD_NOTIFICATIONS: &[&str] = &[
    "notifications/cancelled",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/tools/list_changed",
    "notifications/elicitation/complete",
    "notifications/tasks/status",
];

/// Describes an oversize line.
pub fn decode_oversize(len: usize, max_len: usize, head: &[u8], tail: &[u8]) -> Unreadable {
    Unreadable {
        reason: format!("is larger than {} ({len} bytes)", format_limit(max_len)),
        oversize: Some(format_limit(max_len)),
        shown: shorten(head),
        id: find_id(head).or_else(|| find_trailing_id(tail)),
    }
}

impl Unreadable {
    /// The whole story for a person, naming the server.
    pub fn describe(&self, server: &str) -> String {
        match &self.oversize {
            Some(limit) => format!(
                "message larger than {limit} from server `{server}` ({}); it starts: {}",
                self.reason
                    .rsplit_once('(')
                    .map_or("", |(_, bytes)| bytes.trim_end_matches(')')),
                self.shown
            ),
            None => format!(
                "server `{server}` sent a message that {}: {}",
                self.reason, self.shown
            ),
        }
    }
}

/// `16 MB`, or bytes for limits under a megabyte.
pub fn format_limit(bytes: usize) -> String {
    const MB: usize = 1024 * 1024;
    if bytes >= MB && bytes.is_multiple_of(MB) {
        format!("{} MB", bytes / MB)
    } else if bytes >= MB {
        format!("{:.1} MB", bytes as f64 / MB as f64)
    } else {
        format!("{bytes} bytes")
    }
}

fn json_id(v: &serde_json::Value) -> Option<RequestId> {
    match v {
        serde_json::Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        serde_json::Value::String(s) => Some(NumberOrString::String(s.as_str().into())),
        _ => None,
    }
}

/// The top-level `"id"` of a JSON object that may be cut off or broken further on: a scan that
/// tracks strings and nesting, so an `"id"` inside `params` or `result` is not taken.
pub fn find_id(bytes: &[u8]) -> Option<RequestId> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let end = string_end(bytes, i)?;
                if depth == 1 && &bytes[i + 1..end] == b"id" {
                    let rest = skip_ws(bytes, end + 1);
                    if bytes.get(rest) == Some(&b':') {
                        return scalar_id(bytes, skip_ws(bytes, rest + 1));
                    }
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The `"id"` among the last members of an object whose start is lost (the tail of an oversize
/// line): walks back over `"key": scalar` members from the closing brace.
pub fn find_trailing_id(tail: &[u8]) -> Option<RequestId> {
    let text = std::str::from_utf8(tail)
        .ok()
        .or_else(|| {
            // The cut may have split a UTF-8 sequence at the front.
            (1..4).find_map(|n| std::str::from_utf8(tail.get(n..)?).ok())
        })?
        .trim_end();
    let mut rest = text.strip_suffix('}')?;
    for _ in 0..4 {
        // value
        let trimmed = rest.trim_end();
        let (before_value, value) = if let Some(inner) = trimmed.strip_suffix('"') {
            let start = inner.rfind('"')?;
            (
                &inner[..start],
                Some(&inner[start + 1..]).map(|s| (s, true)),
            )
        } else {
            let start = trimmed
                .rfind(|c: char| !(c.is_ascii_digit() || c == '-'))
                .map_or(0, |i| i + 1);
            (&trimmed[..start], Some((&trimmed[start..], false)))
        };
        let (value, is_string) = value?;
        let before_colon = before_value.trim_end().strip_suffix(':')?.trim_end();
        let key_inner = before_colon.strip_suffix('"')?;
        let key_start = key_inner.rfind('"')?;
        let key = &key_inner[key_start + 1..];
        if key == "id" {
            return if is_string {
                Some(NumberOrString::String(value.into()))
            } else {
                value.parse().ok().map(NumberOrString::Number)
            };
        }
        rest = key_inner[..key_start].trim_end().strip_suffix(',')?;
    }
    None
}

fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

fn scalar_id(bytes: &[u8], i: usize) -> Option<RequestId> {
    match bytes.get(i)? {
        b'"' => {
            let end = string_end(bytes, i)?;
            let s = std::str::from_utf8(&bytes[i + 1..end]).ok()?;
            Some(NumberOrString::String(s.into()))
        }
        b'-' | b'0'..=b'9' => {
            let end = (i + 1..bytes.len())
                .find(|&j| !bytes[j].is_ascii_digit())
                .unwrap_or(bytes.len());
            std::str::from_utf8(&bytes[i..end])
                .ok()?
                .parse()
                .ok()
                .map(NumberOrString::Number)
        }
        _ => None,
    }
}

/// A printable, shortened copy of a line: invalid UTF-8 and control characters escaped (a
/// server's output must not drive the user's terminal), the middle cut out if long.
pub fn shorten(line: &[u8]) -> String {
    shorten_to(line, SHOWN_CHARS)
}

/// [`shorten`] to at most about `max_chars` characters.
pub fn shorten_to(line: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(line);
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let push = |out: &mut String, c: char| {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    };
    if chars.len() <= max_chars {
        chars.iter().for_each(|&c| push(&mut out, c));
    } else {
        let head = max_chars * 3 / 4;
        let tail = max_chars - head;
        chars[..head].iter().for_each(|&c| push(&mut out, c));
        out.push_str(&format!(" … ({} characters) … ", chars.len()));
        chars[chars.len() - tail..]
            .iter()
            .for_each(|&c| push(&mut out, c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(i: i64) -> Option<RequestId> {
        Some(NumberOrString::Number(i))
    }

    #[test]
    fn finds_top_level_id_in_broken_json() {
        assert_eq!(find_id(br#"{"jsonrpc":"2.0","id":7,"result":{"#), n(7));
        assert_eq!(
            find_id(br#"{"result":{"id":3,"x":"}"},"id":"abc""#),
            Some(NumberOrString::String("abc".into()))
        );
        assert_eq!(find_id(br#"{"result":{"id":3}"#), None);
        assert_eq!(find_id(b"garbage"), None);
    }

    #[test]
    fn finds_id_at_the_end_of_a_cut_line() {
        assert_eq!(
            find_trailing_id(br#"aaaa"}]},"jsonrpc":"2.0","id":12}"#),
            n(12)
        );
        assert_eq!(
            find_trailing_id(br#"xx"}, "id" : "r-1" , "jsonrpc":"2.0" }"#),
            Some(NumberOrString::String("r-1".into()))
        );
        assert_eq!(find_trailing_id(br#"x"}]}}"#), None);
    }

    #[test]
    fn malformed_and_non_utf8_lines_are_described() {
        let Decoded::Unreadable(u) = decode_line(br#"{"jsonrpc":"2.0","id":4,"result":{oops}}"#)
        else {
            panic!()
        };
        assert!(u.reason.starts_with("is not valid JSON"), "{}", u.reason);
        assert!(
            u.describe("s")
                .starts_with("server `s` sent a message that is not valid JSON")
        );
        assert_eq!(u.id, n(4));
        let Decoded::Unreadable(u) = decode_line(b"{\"id\":5,\"x\":\"\xff\x1b[2J\"}") else {
            panic!()
        };
        assert!(u.reason.contains("UTF-8"), "{}", u.reason);
        assert_eq!(u.id, n(5));
        assert!(!u.shown.contains('\x1b'), "{}", u.shown);
        // Notifications outside MCP are not errors.
        assert!(!matches!(
            decode_line(br#"{"jsonrpc":"2.0","method":"$/lsp","params":{}}"#),
            Decoded::Unreadable(_)
        ));
        assert!(matches!(decode_line(b"  "), Decoded::Skip));
    }

    #[test]
    fn long_lines_are_shortened() {
        let line = vec![b'a'; 10_000];
        let shown = shorten(&line);
        assert!(shown.len() < 300);
        assert!(shown.contains("10000 characters"));
    }

    #[tokio::test]
    async fn oversize_lines_keep_both_ends_only() {
        let mut input = br#"{"jsonrpc":"2.0","result":{"text":""#.to_vec();
        input.extend(std::iter::repeat_n(b'x', 100_000));
        input.extend_from_slice(br#""},"id":9}"#);
        input.push(b'\n');
        input.extend_from_slice(b"{\"ok\":1}\n");
        let mut reader = LineReader::new(tokio::io::BufReader::new(&input[..]), 1000);
        let Some(Frame::Oversize { len, head, tail }) = reader.next().await.unwrap() else {
            panic!()
        };
        assert_eq!(len, input.len() - 10);
        assert!(head.len() <= HEAD_BYTES && tail.len() <= TAIL_BYTES);
        let u = decode_oversize(len, 1000, &head, &tail);
        assert_eq!(u.id, n(9));
        assert!(
            u.describe("s").starts_with(&format!(
                "message larger than 1000 bytes from server `s` ({len} bytes)"
            )),
            "{}",
            u.describe("s")
        );
        assert_eq!(
            reader.next().await.unwrap(),
            Some(Frame::Line(b"{\"ok\":1}".to_vec()))
        );
        assert_eq!(reader.next().await.unwrap(), None);
    }
}
