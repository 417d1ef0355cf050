//! What the gateway records about each request: a tracing span (method, server, tool, duration,
//! outcome) and, with `[serve] instrumentation = PATH`, one JSON line per request.
//!
//! Lines are written by a background task, so a slow disk never delays a response (records that
//! finish together go out in one write); a write that fails is logged once and the gateway keeps
//! serving.
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::io::AsyncWriteExt;

/// One finished request.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// Milliseconds since the Unix epoch when the request finished.
    pub ts_ms: u64,
    pub method: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub duration_us: u64,
    /// `ok`, `tool_error` (the tool reported an error), `denied` (policy), `error` (a JSON-RPC
    /// error went back), `cancelled`, or `panic` (an internal fault, caught).
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Record {
    pub fn new(method: &str, server: Option<&str>, tool: Option<&str>, took: Duration) -> Self {
        Record {
            ts_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or_default(),
            method: method.to_string(),
            server: server.map(str::to_string),
            tool: tool.map(str::to_string),
            duration_us: took.as_micros() as u64,
            outcome: "ok".into(),
            error: None,
        }
    }
}

/// Where records go. Cheap to clone.
#[derive(Clone, Default)]
pub struct Instrumentation {
    log: Option<tokio::sync::mpsc::UnboundedSender<Record>>,
}

impl Instrumentation {
    /// No JSON-lines log: spans only.
    pub fn spans_only() -> Self {
        Self::default()
    }

    /// Appends JSON lines to `path` (created if missing). Err: the file cannot be opened.
    pub async fn to_file(path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(parent).await?;
        }
        let mut file = tokio::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .await?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Record>();
        let path: PathBuf = path.to_path_buf();
        tokio::spawn(async move {
            let mut failed = false;
            let mut lines = Vec::new();
            while let Some(record) = rx.recv().await {
                // Whatever else finished meanwhile goes out in the same write.
                lines.clear();
                let mut next = Some(record);
                while let Some(record) = next {
                    if serde_json::to_writer(&mut lines, &record).is_ok() {
                        lines.push(b'\n');
                    }
                    next = rx.try_recv().ok();
                }
                let written = async {
                    file.write_all(&lines).await?;
                    file.flush().await
                }
                .await;
                if let Err(err) = written
                    && !failed
                {
                    failed = true;
                    tracing::warn!(
                        "instrumentation log {}: write failed: {err} (the gateway keeps serving)",
                        path.display()
                    );
                }
            }
        });
        Ok(Instrumentation { log: Some(tx) })
    }

    /// Records a finished request: a tracing event in the request's span, and the JSON line.
    pub fn record(&self, record: Record) {
        tracing::info!(
            method = %record.method,
            server = record.server.as_deref().unwrap_or(""),
            tool = record.tool.as_deref().unwrap_or(""),
            duration_us = record.duration_us,
            outcome = %record.outcome,
            error = record.error.as_deref().unwrap_or(""),
            "request finished"
        );
        if let Some(log) = &self.log {
            let _ = log.send(record);
        }
    }
}
