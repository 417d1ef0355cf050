//! rmcp's `Transport` over a spawned server's stdio, with rkmcp's own framing ([`super::framing`])
//! and shutdown.
//!
//! - Reading happens in `receive`, one line at a time, so a server that writes faster than rkmcp
//!   reads is slowed by the pipe, not buffered in memory (and no task or channel stands between
//!   the pipe and rmcp). After `close`, what the server still writes is read and dropped, so it
//!   cannot block on a full pipe while it shuts down.
//! - A line that cannot be read (malformed JSON, invalid UTF-8, larger than `max_message_mb`) is
//!   reported once, naming the server and showing the line shortened; when it carries the id of
//!   a request, an error response for that id is handed to rmcp in its place, so the request
//!   fails at once with that explanation instead of waiting out its timeout.
//! - Shutdown follows the spec's stdio sequence (close stdin, wait, SIGTERM, wait, SIGKILL) for
//!   the whole process group, then waits for the stderr log to be complete.
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{ErrorCode, ErrorData};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;
use tokio::sync::Mutex;

use super::child::{self, ServerProcess};
use super::framing::{self, Decoded, Frame, LineReader, Unreadable};

/// How long each step of the shutdown sequence waits for the server to exit.
const EXIT_WAIT: Duration = Duration::from_secs(3);
/// How long shutdown waits for the stderr log to be complete.
const LOG_WAIT: Duration = Duration::from_secs(2);
/// JSON-RPC error code of the responses made up here for unreadable answers. It is in the range
/// JSON-RPC reserves for implementations; [`super::errors`] shows these without the code.
pub const UNREADABLE_CODE: i32 = -32099;

pub struct StdioTransport {
    stdin: Arc<Mutex<Option<tokio::process::ChildStdin>>>,
    /// The server's stdout; `None` once closed (or after it ended).
    reader: Option<LineReader<BufReader<ChildStdout>>>,
    server: String,
    max_message: usize,
    process: Option<Process>,
}

struct Process {
    server: String,
    child: tokio::process::Child,
    pgid: Option<u32>,
    stderr: Option<child::StderrCopier>,
}

impl StdioTransport {
    /// Takes over a spawned server. `max_message` is in bytes.
    pub fn new(server: &str, process: ServerProcess, max_message: usize) -> Self {
        StdioTransport {
            stdin: Arc::new(Mutex::new(Some(process.stdin))),
            reader: Some(LineReader::new(BufReader::new(process.stdout), max_message)),
            server: server.to_string(),
            max_message,
            process: Some(Process {
                server: server.to_string(),
                child: process.child,
                pgid: process.pgid,
                stderr: process.stderr,
            }),
        }
    }
}

impl StdioTransport {
    /// The next message from the server; `None` once its stdout ended. Cancel-safe (rmcp drops
    /// it when something else comes first): a partly read line stays in the reader.
    async fn next_message(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let reader = self.reader.as_mut()?;
            let frame = match reader.next().await {
                Ok(Some(frame)) => frame,
                Ok(None) => {
                    self.reader = None;
                    return None;
                }
                Err(err) => {
                    tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %self.server, "cannot read from the server: {err}");
                    self.reader = None;
                    return None;
                }
            };
            let message = match frame {
                Frame::Line(line) => match framing::decode_line(&line) {
                    Decoded::Message(message) => Some(*message),
                    Decoded::Skip => None,
                    Decoded::Unreadable(unreadable) => report(&self.server, unreadable),
                },
                Frame::Oversize { len, head, tail } => report(
                    &self.server,
                    framing::decode_oversize(len, self.max_message, &head, &tail),
                ),
            };
            if message.is_some() {
                return message;
            }
        }
    }
}

/// Reads what a closing server still writes, until it closes its stdout (or for as long as the
/// shutdown sequence can take: a process that escaped the group may hold it open).
async fn drain(mut reader: LineReader<BufReader<ChildStdout>>) {
    let _ = tokio::time::timeout(EXIT_WAIT * 3 + LOG_WAIT, async {
        while let Ok(Some(_)) = reader.next().await {}
    })
    .await;
}

/// Logs an unreadable line and, when it names a request, makes up the error that request gets.
fn report(server: &str, unreadable: Unreadable) -> Option<RxJsonRpcMessage<RoleClient>> {
    let text = unreadable.describe(server);
    match unreadable.id {
        Some(id) => {
            tracing::debug!("{text} (failing request {id})");
            Some(RxJsonRpcMessage::<RoleClient>::error(
                ErrorData::new(ErrorCode(UNREADABLE_CODE), text, None),
                Some(id),
            ))
        }
        // Nothing to fail: the user must at least be told (a request may now time out).
        None => {
            tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, "{text}");
            None
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    #[error("the server's stdin is closed")]
    Closed,
    #[error("cannot encode a message for the server")]
    Encode(#[source] serde_json::Error),
    #[error("cannot write to the server")]
    Write(#[source] std::io::Error),
}

impl rmcp::transport::Transport<RoleClient> for StdioTransport {
    type Error = StdioError;

    fn name() -> std::borrow::Cow<'static, str> {
        "stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(StdioError::Encode)?;
            line.push(b'\n');
            let mut guard = stdin.lock().await;
            let pipe = guard.as_mut().ok_or(StdioError::Closed)?;
            pipe.write_all(&line).await.map_err(StdioError::Write)?;
            pipe.flush().await.map_err(StdioError::Write)
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.next_message()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin is the spec's first step.
        self.stdin.lock().await.take();
        if let Some(reader) = self.reader.take() {
            tokio::spawn(drain(reader));
        }
        if let Some(process) = self.process.take() {
            process.shut_down().await;
        }
        Ok(())
    }
}

impl Process {
    /// Waits for the server to exit on its own, then signals its group: SIGTERM, then SIGKILL.
    /// Whatever is left of the group after its leader exited (a launcher's child) gets the same.
    async fn shut_down(mut self) {
        let exited = tokio::time::timeout(EXIT_WAIT, self.child.wait()).await;
        if exited.is_err() {
            self.signal(libc::SIGTERM);
            if tokio::time::timeout(EXIT_WAIT, self.child.wait())
                .await
                .is_err()
            {
                tracing::debug!(server = %self.server, "the server ignored SIGTERM; killing it");
                self.signal(libc::SIGKILL);
                let _ = self.child.wait().await;
            }
        }
        if let Some(pgid) = self.pgid
            && child::group_alive(pgid)
        {
            self.signal(libc::SIGTERM);
            let deadline = tokio::time::Instant::now() + EXIT_WAIT;
            while child::group_alive(pgid) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            self.signal(libc::SIGKILL);
        }
        if let Some(pgid) = self.pgid.take() {
            super::watchdog::forget(pgid);
        }
        if let Some(stderr) = self.stderr.take() {
            let complete = tokio::task::spawn_blocking(move || stderr.finish(LOG_WAIT))
                .await
                .unwrap_or(false);
            if !complete {
                tracing::debug!(server = %self.server, "the server's stderr was still open at shutdown");
            }
        }
    }

    fn signal(&self, signal: i32) {
        match self.pgid {
            Some(pgid) => {
                child::signal_group(pgid, signal);
            }
            None => {
                if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
                    // SAFETY: kill(2) on our own child's pid.
                    unsafe { libc::kill(pid, signal) };
                }
            }
        }
    }
}

impl Drop for StdioTransport {
    /// Dropped without `close` (a failed start, a panic): end the whole group now.
    fn drop(&mut self) {
        if let Some(process) = self.process.take()
            && let Some(pgid) = process.pgid
        {
            child::signal_group(pgid, libc::SIGTERM);
            let kill_later = async move {
                tokio::time::sleep(EXIT_WAIT).await;
                child::signal_group(pgid, libc::SIGKILL);
                drop(process);
                super::watchdog::forget(pgid);
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(kill_later);
                }
                Err(_) => {
                    child::signal_group(pgid, libc::SIGKILL);
                }
            }
        }
    }
}
