//! `rkmcp audit tail [--server S] [--follow] [-n N]`: the last entries of the audit log, as
//! one line each (or the JSON lines themselves with `--json`), following the file across
//! rotations with `--follow`.
//!
//! `rkmcp audit verify [FILE]`: recomputes the log's hash chain over the file and its rotated
//! files, oldest first; exit code 0 when intact, 1 at the first edited, removed, inserted or
//! reordered line (named by file and line), 2 when there is no log to check.
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::Value;

use super::{Context, UsageError};

#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Show the last entries of the audit log.
    Tail {
        /// Only entries of this server.
        #[arg(long, short = 's')]
        server: Option<String>,
        /// Keep printing entries as they are written.
        #[arg(long, short = 'f')]
        follow: bool,
        /// How many entries to show first.
        #[arg(long, short = 'n', default_value_t = 20)]
        lines: usize,
    },
    /// Check the audit log's hash chain: name the first line that was edited, removed,
    /// inserted or reordered (exit code 1), or say it is intact (0).
    Verify {
        /// The log to check, with its rotated files FILE.1, FILE.2, … (default: the configured
        /// audit log).
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
    },
}

pub async fn run(ctx: &Context, cmd: AuditCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AuditCommand::Tail {
            server,
            follow,
            lines,
        } => tail(ctx, server, follow, lines).await,
        AuditCommand::Verify { file } => verify(ctx, file),
    }
}

/// The configured audit log (`[audit] path` or `--audit FILE`).
fn configured_path(ctx: &Context) -> anyhow::Result<PathBuf> {
    let config = ctx.load_config()?;
    let settings: crate::audit::AuditSettings = config.section("audit")?;
    Ok(settings
        .path
        .map(|p| crate::audit::expand_home(&p))
        .ok_or_else(|| {
            UsageError("no audit log is configured: set `[audit] path` or pass --audit FILE".into())
        })?)
}

fn verify(ctx: &Context, file: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    use crate::audit::verify;
    let path = match file {
        Some(file) => file,
        None => configured_path(ctx)?,
    };
    let files = verify::files_of(&path).map_err(|err| {
        UsageError(format!(
            "cannot list the audit log's files next to {}: {err}",
            path.display()
        ))
    })?;
    if files.is_empty() {
        return Err(UsageError(format!("there is no audit log at {}", path.display())).into());
    }
    let report = verify::verify(&files).map_err(|err| UsageError(err.to_string()))?;
    if ctx.global.json {
        let mut value = serde_json::to_value(&report)?;
        value["intact"] = report.intact().into();
        if let Some(problem) = &report.problem {
            value["problem"]["message"] = problem.to_string().into();
        }
        println!("{value}");
    } else {
        let files_word = if report.files.len() == 1 {
            "file"
        } else {
            "files"
        };
        let lines_word = if report.lines == 1 { "line" } else { "lines" };
        let counts = format!(
            "{} {lines_word} in {} {files_word}",
            report.lines,
            report.files.len()
        );
        match &report.problem {
            None if report.unchained > 0 => println!(
                "audit log intact: {counts} ({} unchained, written before chaining)",
                report.unchained
            ),
            None => println!("audit log intact: {counts}"),
            Some(problem) if report.chained == 0 => println!("audit log tampered: {problem}"),
            Some(problem) if report.chained == 1 => {
                println!("audit log tampered: {problem} (the chained line before it is intact)")
            }
            Some(problem) => println!(
                "audit log tampered: {problem} (the {} chained lines before it are intact)",
                report.chained
            ),
        }
        for note in &report.notes {
            println!("  note: {note}");
        }
    }
    Ok(if report.intact() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

async fn tail(
    ctx: &Context,
    server: Option<String>,
    follow: bool,
    lines: usize,
) -> anyhow::Result<ExitCode> {
    let path = configured_path(ctx)?;
    let json = ctx.global.json;
    let show = |line: &str| {
        if let Some(text) = render(line, server.as_deref(), json) {
            println!("{text}");
        }
    };
    let text = match std::fs::read(&path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && follow => String::new(),
        Err(err) => {
            return Err(err)
                .with_context(|| format!("cannot read the audit log {}", path.display()));
        }
    };
    let matching: Vec<&str> = text
        .lines()
        .filter(|l| render(l, server.as_deref(), true).is_some())
        .collect();
    for line in &matching[matching.len().saturating_sub(lines)..] {
        show(line);
    }
    if follow {
        follow_file(&path, text.len() as u64, show).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what is appended to `path` from `offset` on; starts over when the file is replaced
/// (rotated) or shrinks.
async fn follow_file(path: &Path, mut offset: u64, show: impl Fn(&str)) -> anyhow::Result<()> {
    let identity = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
    };
    let mut inode = identity(path);
    let mut partial = String::new();
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = identity(path);
        if now != inode {
            inode = now;
            offset = 0;
            partial.clear();
        }
        let Ok(mut file) = std::fs::File::open(path) else {
            continue;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < offset {
            offset = 0;
            partial.clear();
        }
        if len == offset {
            continue;
        }
        file.seek(SeekFrom::Start(offset))?;
        let mut bytes = Vec::new();
        file.take(len - offset).read_to_end(&mut bytes)?;
        offset = len;
        partial.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = partial.find('\n') {
            let line: String = partial.drain(..=end).collect();
            show(line.trim_end());
        }
    }
}

/// One entry for display, or `None` when it is filtered out (or not an entry).
fn render(line: &str, server: Option<&str>, json: bool) -> Option<String> {
    let entry: Value = serde_json::from_str(line).ok()?;
    if let Some(want) = server
        && entry.get("server").and_then(Value::as_str) != Some(want)
    {
        return None;
    }
    if json {
        // Already JSON: control characters in it are escaped.
        return Some(line.to_string());
    }
    let field = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
    let kind = field("kind");
    let summary = match kind {
        "tool_call" => format!(
            "{} {} by {} {}",
            field("tool"),
            field("decision"),
            field("decided_by"),
            entry
                .get("arguments")
                .map(Value::to_string)
                .unwrap_or_default()
        ),
        "plugin_fault" => format!("{}: {}", field("plugin"), field("fault")),
        crate::audit::chain::KIND => format!("{} {}", field("event"), field("reason"))
            .trim_end()
            .to_string(),
        "server_start" => format!(
            "{} {}",
            field("transport"),
            entry
                .get("command")
                .or_else(|| entry.get("url"))
                .and_then(Value::as_str)
                .unwrap_or("")
        ),
        _ => {
            let arrow = match field("direction") {
                "to_server" => "→",
                "from_server" => "←",
                _ => "",
            };
            let message = entry.get("message").cloned().unwrap_or(Value::Null);
            let what = match (message.get("method"), message.get("id")) {
                (Some(m), _) => m.as_str().unwrap_or("").to_string(),
                (None, Some(id)) if message.get("error").is_some() => format!("error for #{id}"),
                (None, Some(id)) => format!("result for #{id}"),
                _ => String::new(),
            };
            format!("{arrow} {what} {message}")
        }
    };
    let text = format!(
        "{} {} {kind} {summary}",
        field("time"),
        entry.get("server").and_then(Value::as_str).unwrap_or("-"),
    );
    Some(crate::mcp::framing::shorten_to(text.as_bytes(), 400))
}
