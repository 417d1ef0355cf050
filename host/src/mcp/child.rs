//! Spawning stdio MCP servers.
//!
//! - The child sees only the variables the config names plus a small safe default set (as the
//!   TypeScript and Python SDKs do), not rkmcp's whole environment: API keys in the user's shell
//!   are not handed to every server.
//! - It runs in its own process group, so a Ctrl-C in the terminal reaches rkmcp (which shuts the
//!   server down in order) rather than killing servers mid-request, and with a parent-death
//!   signal, so a crashed or killed rkmcp leaves no orphans.
//! - Its stderr goes to a per-server log file and to `tracing` at debug level, never to the
//!   user's terminal.
//! - Shutdown follows the spec (close stdin, wait, SIGTERM, wait, SIGKILL): rmcp's
//!   `TokioChildProcess` implements that sequence when the transport is closed.
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::transport::TokioChildProcess;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::config::ServerConfig;

/// Variables passed through from rkmcp's environment when set. Enough for interpreters,
/// package runners (npx, uvx) and locale handling to work; nothing that usually holds a secret.
pub const INHERITED_ENV: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "SYSTEMROOT",
];

/// The environment a server gets: the inherited safe set, then the server's `env` entries.
pub fn child_env(server: &ServerConfig) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = INHERITED_ENV
        .iter()
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
        .filter(|(name, _)| !server.env.contains_key(name))
        .collect();
    env.extend(server.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// A spawned server: the rmcp transport over its stdio, and where its stderr is logged.
pub struct SpawnedServer {
    pub transport: TokioChildProcess,
    pub log_path: PathBuf,
    pub pid: Option<u32>,
}

pub fn spawn(server: &ServerConfig, log_dir: &Path) -> std::io::Result<SpawnedServer> {
    let program = server
        .command
        .as_deref()
        .ok_or_else(|| std::io::Error::other("no command configured"))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(&server.args)
        .env_clear()
        .envs(child_env(server));
    if let Some(cwd) = &server.cwd {
        command.current_dir(cwd);
    }
    #[cfg(target_os = "linux")]
    // SAFETY: only async-signal-safe calls (setpgid, prctl) between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SIGTERM rather than SIGKILL: the server may still flush its own state.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = transport.id();
    let log_path = log_dir.join(format!("{}.log", server.name));
    if let Some(stderr) = stderr {
        tokio::spawn(forward_stderr(
            server.name.clone(),
            stderr,
            log_path.clone(),
        ));
    }
    Ok(SpawnedServer {
        transport,
        log_path,
        pid,
    })
}

/// Copies the child's stderr line by line into its log file and to `tracing`.
async fn forward_stderr(name: String, stderr: tokio::process::ChildStderr, log_path: PathBuf) {
    let mut file = match open_log(&log_path).await {
        Ok(f) => Some(f),
        Err(err) => {
            tracing::warn!(server = %name, "cannot open server log {}: {err}", log_path.display());
            None
        }
    };
    let mut lines = BufReader::new(stderr).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                tracing::debug!(server = %name, "stderr: {line}");
                if let Some(f) = file.as_mut() {
                    let _ = f.write_all(line.as_bytes()).await;
                    let _ = f.write_all(b"\n").await;
                }
            }
            Ok(None) => break,
            Err(err) => {
                // Non-UTF-8 output: note it and stop reading rather than spin.
                tracing::debug!(server = %name, "stderr unreadable: {err}");
                break;
            }
        }
    }
    if let Some(mut f) = file {
        let _ = f.flush().await;
    }
}

async fn open_log(path: &Path) -> std::io::Result<tokio::fs::File> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await?;
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
    file.write_all(format!("--- rkmcp started this server at {stamp} ---\n").as_bytes())
        .await?;
    Ok(file)
}
