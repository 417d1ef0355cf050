//! The audit log: a record of what went to which server and what came back, in JSON lines.
//!
//! Off by default; `[audit] path = "…"` or `--audit FILE` turns it on. Every MCP message of
//! every server is recorded in both directions (the transport tap in `rkmcp_sessions::tap`), with
//! sampling and elicitation requests and answers marked as such; the chat loop records each
//! tool call with its approval decision and who decided; plugin faults are recorded too.
//! Secrets are redacted before anything is written ([`redact`]); the file rotates by size
//! ([`rotate`]). `rkmcp audit tail` reads it.
//!
//! The log is tamper-evident ([`chain`]): each line ends with `"prev"` (the previous line's
//! chain value) and `"chain"` (hex SHA-256 of that value and the line without its chain field),
//! so every line is linked to the one before it, from the first line of a new log (linked to a
//! fixed genesis value) across restarts and rotations. `rkmcp audit verify [FILE]` ([`verify`])
//! recomputes the chain over the log and its rotated files, oldest first, and names the first
//! line that was edited, removed, inserted or reordered (exit code 1), or says the log is
//! intact (0). Lines an older rkmcp wrote without a chain are reported as such, not as
//! tampering; a torn last line (an interrupted write) makes the next run start a new chain with
//! a `restart` record that says why. The chain has no key: it shows changes made without
//! recomputing it, not a rewrite of the whole chain, nor lines cut from the end of the log.
//!
//! ```toml
//! [audit]
//! path = "~/.local/state/rkmcp/audit.jsonl"
//! max_size_mb = 10          # rotate when the file would grow past this (default 10)
//! keep = 3                  # rotated files kept: audit.jsonl.1 … .3 (default 3)
//! redact_keys = ["*password*", "*token*", "*secret*"]   # default: a wider built-in list
//! ```
use std::path::PathBuf;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};

pub mod chain;
pub mod redact;
pub mod rotate;
pub mod verify;

use redact::Redactor;
use rotate::RotatingFile;

/// `[audit]` as written.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    pub path: Option<PathBuf>,
    pub max_size_mb: f64,
    pub keep: usize,
    pub redact_keys: Vec<String>,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            path: None,
            max_size_mb: 10.0,
            keep: 3,
            redact_keys: redact::DEFAULT_KEYS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// `~/x` → `$HOME/x`.
pub fn expand_home(path: &std::path::Path) -> PathBuf {
    match (path.strip_prefix("~"), dirs::home_dir()) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    }
}

/// The time an entry is written, as recorded in its `time` field.
pub fn timestamp() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Which way a message went.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    ToServer,
    FromServer,
}

pub struct AuditLog {
    file: Mutex<RotatingFile>,
    redactor: Redactor,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("audit log: {0}")]
    Settings(String),
    #[error("cannot open the audit log {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl AuditLog {
    /// Opens the log the config asks for; `None` when auditing is off.
    pub fn from_config(config: &rkmcp_config::Config) -> Result<Option<AuditLog>, AuditError> {
        let settings: AuditSettings = config
            .section("audit")
            .map_err(|e| AuditError::Settings(e.to_string()))?;
        let Some(path) = settings.path.as_deref().map(expand_home) else {
            return Ok(None);
        };
        let secrets = redact::config_secrets(&config.servers);
        AuditLog::open(path, &settings, secrets).map(Some)
    }

    pub fn open(
        path: PathBuf,
        settings: &AuditSettings,
        secrets: Vec<String>,
    ) -> Result<AuditLog, AuditError> {
        if !(settings.max_size_mb.is_finite() && settings.max_size_mb > 0.0) {
            return Err(AuditError::Settings(format!(
                "`audit.max_size_mb` must be a positive number, not {}",
                settings.max_size_mb
            )));
        }
        let redactor =
            Redactor::new(&settings.redact_keys, secrets).map_err(AuditError::Settings)?;
        let max_bytes = (settings.max_size_mb * 1024.0 * 1024.0) as u64;
        let file = RotatingFile::open(&path, max_bytes, settings.keep).map_err(|source| {
            AuditError::Open {
                path: path.clone(),
                source,
            }
        })?;
        Ok(AuditLog {
            file: Mutex::new(file),
            redactor,
            path,
        })
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Writes one entry: `fields` (an object) with the time and `kind` added, redacted.
    pub fn record(&self, server: Option<&str>, kind: &str, fields: Value) {
        let mut entry = serde_json::Map::new();
        entry.insert("time".into(), timestamp().into());
        if let Some(server) = server {
            entry.insert("server".into(), server.into());
        }
        entry.insert("kind".into(), kind.into());
        if let Value::Object(fields) = fields {
            entry.extend(fields);
        }
        let mut entry = Value::Object(entry);
        self.redactor.value(&mut entry);
        let line = entry.to_string();
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = file.write_entry(line.as_bytes()) {
            // Warn once per failure streak would need state; a warning per entry is acceptable
            // because a failing audit log is something the user must notice.
            tracing::error!(target: rkmcp_term_safe::NOTICE_TARGET, "cannot write the audit log {}: {err}", self.path.display());
        }
    }

    /// One MCP message. `topic` marks sampling and elicitation traffic.
    pub fn message(
        &self,
        server: &str,
        direction: Direction,
        topic: Option<&str>,
        message: &impl Serialize,
    ) {
        let message = serde_json::to_value(message).unwrap_or(Value::Null);
        let kind = topic.unwrap_or("message");
        self.record(
            Some(server),
            kind,
            json!({"direction": direction, "message": message}),
        );
    }

    /// A tool call and its approval: `decision` is `allow` or `deny`, `decided_by` who decided
    /// (`user`, `policy`, `guard:<plugin>`, …).
    pub fn tool_call(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
        decision: &str,
        decided_by: &str,
        reason: Option<&str>,
    ) {
        self.record(
            Some(server),
            "tool_call",
            json!({
                "tool": tool,
                "arguments": arguments,
                "decision": decision,
                "decided_by": decided_by,
                "reason": reason,
            }),
        );
    }

    pub fn plugin_fault(&self, plugin: &str, fault: &str) {
        self.record(
            None,
            "plugin_fault",
            json!({"plugin": plugin, "fault": fault}),
        );
    }

    /// How a server was started: command, arguments and env names, header names — the values
    /// are redacted like everything else.
    pub fn server_start(&self, server: &rkmcp_config::ServerConfig) {
        let redacted = |map: &std::collections::BTreeMap<String, String>| -> Value {
            map.keys()
                .map(|k| (k.clone(), Value::String(redact::REDACTED.into())))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        self.record(
            Some(&server.name),
            "server_start",
            json!({
                "transport": server.transport.to_string(),
                "command": server.command,
                "args": server.args,
                "url": server.url,
                "env": redacted(&server.env),
                "headers": redacted(&server.headers),
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_redacted_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.jsonl");
        let log = AuditLog::open(
            path.clone(),
            &AuditSettings::default(),
            vec!["s3cr3t-env".into()],
        )
        .unwrap();
        log.tool_call(
            "srv",
            "login",
            &json!({"user": "ann", "password": "pw-123", "note": "s3cr3t-env"}),
            "allow",
            "user",
            None,
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("pw-123") && !text.contains("s3cr3t-env"),
            "{text}"
        );
        // A new log starts with the record that starts its hash chain.
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["kind"], "audit_chain");
        assert_eq!(lines[1]["prev"], lines[0]["chain"]);
        let entry = &lines[1];
        assert_eq!(entry["kind"], "tool_call");
        assert_eq!(entry["decided_by"], "user");
        assert_eq!(entry["arguments"]["user"], "ann");
    }
}
