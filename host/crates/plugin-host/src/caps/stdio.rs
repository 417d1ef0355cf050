//! Plugin stdout/stderr: split into lines and sent to `tracing` with the plugin's name, with a
//! token bucket per plugin so a flooding plugin cannot flood the host's log. Dropped lines are
//! counted and reported in one summary line. The last stderr lines are kept because a Rust
//! panic message arrives there just before the trap, and a fault report should quote it.
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Longest line kept; the rest of a longer line is cut.
const MAX_LINE: usize = 2048;
/// Lines per second a plugin may log, and the burst it may use at once.
const RATE_PER_S: f64 = 50.0;
const BURST: f64 = 200.0;
const KEEP_STDERR_LINES: usize = 4;

/// Counters shared by all instances of one plugin.
#[derive(Debug, Default)]
pub struct OutputStats {
    pub lines_logged: AtomicU64,
    pub lines_dropped: AtomicU64,
}

struct Bucket {
    tokens: f64,
    last: Instant,
    dropped_since_report: u64,
}

/// The rate limit is per plugin (shared by its instances), not per stream.
pub struct OutputLimiter {
    bucket: Mutex<Bucket>,
    pub stats: OutputStats,
}

impl Default for OutputLimiter {
    fn default() -> Self {
        OutputLimiter {
            bucket: Mutex::new(Bucket {
                tokens: BURST,
                last: Instant::now(),
                dropped_since_report: 0,
            }),
            stats: OutputStats::default(),
        }
    }
}

impl OutputLimiter {
    /// Counts the line and says whether it may be logged; reports earlier drops when it may.
    pub fn admit_line(&self) -> bool {
        let (ok, dropped) = self.admit();
        if !ok {
            self.stats.lines_dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.stats.lines_logged.fetch_add(1, Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(dropped, "plugin output rate-limited: lines dropped");
        }
        true
    }

    /// Takes a token for one line; on the first line allowed after drops, also returns how many
    /// were dropped so the caller can say so.
    fn admit(&self) -> (bool, u64) {
        let Ok(mut b) = self.bucket.lock() else {
            return (false, 0);
        };
        let now = Instant::now();
        b.tokens = (b.tokens + now.duration_since(b.last).as_secs_f64() * RATE_PER_S).min(BURST);
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            (true, std::mem::take(&mut b.dropped_since_report))
        } else {
            b.dropped_since_report += 1;
            (false, 0)
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum Stream {
    Stdout,
    Stderr,
}

struct LineState {
    partial: Vec<u8>,
    last_stderr: VecDeque<String>,
}

/// One plugin instance's stdout or stderr.
#[derive(Clone)]
pub struct LogStream {
    plugin: Arc<str>,
    stream: Stream,
    limiter: Arc<OutputLimiter>,
    state: Arc<Mutex<LineState>>,
}

impl LogStream {
    pub fn new(plugin: Arc<str>, stream: Stream, limiter: Arc<OutputLimiter>) -> Self {
        LogStream {
            plugin,
            stream,
            limiter,
            state: Arc::new(Mutex::new(LineState {
                partial: Vec::new(),
                last_stderr: VecDeque::new(),
            })),
        }
    }

    /// The last few complete stderr lines (plus any unterminated tail), oldest first.
    pub fn last_lines(&self) -> Vec<String> {
        let Ok(s) = self.state.lock() else {
            return Vec::new();
        };
        let mut lines: Vec<String> = s.last_stderr.iter().cloned().collect();
        if !s.partial.is_empty() {
            lines.push(rkmcp_term_safe::sanitized_inline(
                String::from_utf8_lossy(&s.partial).into_owned(),
            ));
        }
        lines
    }

    fn write_bytes(&self, buf: &[u8]) {
        let Ok(mut s) = self.state.lock() else { return };
        for &b in buf {
            if b == b'\n' {
                // Cleaned once here: the line is logged and may be quoted in a fault report.
                let line = rkmcp_term_safe::sanitized_inline(
                    String::from_utf8_lossy(&s.partial).into_owned(),
                );
                s.partial.clear();
                if matches!(self.stream, Stream::Stderr) {
                    if s.last_stderr.len() == KEEP_STDERR_LINES {
                        s.last_stderr.pop_front();
                    }
                    s.last_stderr.push_back(line.clone());
                }
                self.emit(&line);
            } else if s.partial.len() < MAX_LINE {
                s.partial.push(b);
            }
        }
    }

    fn emit(&self, line: &str) {
        if !self.limiter.admit_line() {
            return;
        }
        match self.stream {
            Stream::Stdout => tracing::info!(plugin = %self.plugin, stream = "stdout", "{line}"),
            Stream::Stderr => tracing::warn!(plugin = %self.plugin, stream = "stderr", "{line}"),
        }
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for LogStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.write_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
