//! Spawning stdio MCP servers.
//!
//! - The child sees only the variables the config names plus a small safe default set (as the
//!   TypeScript and Python SDKs do), not rkmcp's whole environment: API keys in the user's shell
//!   are not handed to every server.
//! - It runs in its own process group, so a Ctrl-C in the terminal reaches rkmcp (which shuts the
//!   server down in order) rather than killing servers mid-request. Shutdown signals the whole
//!   group, so a server started through a launcher (`sh -c`, `npx`, `uvx`) ends with it; a
//!   parent-death signal and the [`super::watchdog`] end the group when rkmcp itself is killed.
//! - Its stderr goes to a per-server log file and to `tracing` at debug level, never to the
//!   user's terminal. The copier works on bytes (a line that is not UTF-8 is written lossily and
//!   does not stop it) and runs on a thread of its own, so the runtime shutting down cannot cut
//!   off the end of the log; [`StderrCopier::finish`] waits for it.
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rkmcp_config::ServerConfig;

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

/// A spawned server process: its pipes, its process group and its stderr copier.
pub struct ServerProcess {
    pub child: tokio::process::Child,
    pub stdin: tokio::process::ChildStdin,
    pub stdout: tokio::process::ChildStdout,
    /// The process group (the child's pid: it leads a group of its own).
    pub pgid: Option<u32>,
    pub stderr: Option<StderrCopier>,
    pub log_path: PathBuf,
}

pub fn spawn(server: &ServerConfig, log_dir: &Path) -> std::io::Result<ServerProcess> {
    let program = server
        .command
        .as_deref()
        .ok_or_else(|| std::io::Error::other("no command configured"))?;
    let mut command = tokio::process::Command::new(program);
    command
        .args(&server.args)
        .env_clear()
        .envs(child_env(server))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Dropping the handle (a panic, a cancelled start) must not leave the server running.
        .kill_on_drop(true)
        .process_group(0);
    if let Some(cwd) = &server.cwd {
        command.current_dir(cwd);
    }
    #[cfg(target_os = "linux")]
    // SAFETY: only an async-signal-safe call (prctl) between fork and exec.
    unsafe {
        command.pre_exec(|| {
            // SIGTERM rather than SIGKILL: the server may still flush its own state. This reaches
            // the direct child only; the watchdog covers the rest of the group.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let pgid = child.id();
    if let Some(pgid) = pgid {
        super::watchdog::watch(pgid);
    }
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other(
            "the server's stdio pipes were not created",
        ));
    };
    let log_path = log_dir.join(format!("{}.log", server.name));
    let stderr = child
        .stderr
        .take()
        .and_then(|pipe| StderrCopier::start(&server.name, pipe, &log_path));
    Ok(ServerProcess {
        child,
        stdin,
        stdout,
        pgid,
        stderr,
        log_path,
    })
}

/// Sends `signal` to every process of the group.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = i32::try_from(pgid) else {
        return false;
    };
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Whether any process of the group is still alive (zombies included until reaped).
pub fn group_alive(pgid: u32) -> bool {
    signal_group(pgid, 0)
}

/// The longest stderr line kept whole; longer lines are split (a server that never writes a
/// newline must not grow rkmcp's memory).
const MAX_STDERR_LINE: usize = 64 * 1024;

/// Copies a server's stderr into its log file on a thread of its own.
pub struct StderrCopier {
    done: std::sync::mpsc::Receiver<()>,
}

impl StderrCopier {
    fn start(server: &str, pipe: tokio::process::ChildStderr, log_path: &Path) -> Option<Self> {
        let fd = match pipe.into_owned_fd() {
            Ok(fd) => fd,
            Err(err) => {
                tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %server, "cannot read the server's stderr: {err}");
                return None;
            }
        };
        let (tx, done) = std::sync::mpsc::channel();
        let name = server.to_string();
        let path = log_path.to_path_buf();
        let spawned = std::thread::Builder::new()
            .name(format!("stderr-{server}"))
            .spawn(move || {
                copy_stderr(&name, std::fs::File::from(fd), &path);
                let _ = tx.send(());
            });
        match spawned {
            Ok(_) => Some(StderrCopier { done }),
            Err(err) => {
                tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %server, "cannot start the stderr copier: {err}");
                None
            }
        }
    }

    /// Waits (up to `timeout`) until everything the server wrote to stderr is in its log.
    pub fn finish(self, timeout: Duration) -> bool {
        self.done.recv_timeout(timeout).is_ok()
    }
}

fn copy_stderr(name: &str, pipe: std::fs::File, log_path: &Path) {
    let mut file = match open_log(log_path) {
        Ok(f) => Some(f),
        Err(err) => {
            tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %name, "cannot open server log {}: {err}", log_path.display());
            None
        }
    };
    let mut reader = std::io::BufReader::new(pipe);
    let mut line = Vec::new();
    loop {
        line.clear();
        match std::io::Read::take(&mut reader, MAX_STDERR_LINE as u64).read_until(b'\n', &mut line)
        {
            Ok(0) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line));
                tracing::debug!(server = %name, "stderr: {}", text.escape_debug());
                if let Some(f) = file.as_mut() {
                    // One write per line: nothing sits in a buffer when rkmcp exits.
                    let mut out = text.into_owned().into_bytes();
                    out.push(b'\n');
                    if let Err(err) = f.write_all(&out) {
                        tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %name, "cannot write server log {}: {err}", log_path.display());
                        file = None;
                    }
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => {
                tracing::debug!(server = %name, "stderr unreadable: {err}");
                break;
            }
        }
    }
}

fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now());
    file.write_all(format!("--- rkmcp started this server at {stamp} ---\n").as_bytes())?;
    Ok(file)
}
