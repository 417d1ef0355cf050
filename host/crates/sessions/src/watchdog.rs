//! Ends every server's process group when rkmcp dies, however it dies (SIGKILL included).
//!
//! Each stdio server runs in a process group of its own. On an orderly shutdown rkmcp signals
//! the group (see [`super::stdio_transport`]). A parent-death signal (`PR_SET_PDEATHSIG`) on the
//! spawned process is not enough when rkmcp is killed: it reaches only the direct child, and
//! for a launcher (`sh -c`, `npx`, `uvx`) that is not the server — the server is a grandchild,
//! which the kernel neither signals nor tells.
//!
//! So rkmcp starts one small watchdog (a POSIX `sh` loop, in a process group of its own so a
//! Ctrl-C in the terminal does not reach it) and keeps the only write end of a pipe to its
//! stdin. rkmcp tells it `+PGID` when a server group starts and `-PGID` when it has been reaped.
//! When rkmcp exits by any means the kernel closes the pipe; the watchdog reads end-of-file and
//! sends SIGTERM, then SIGKILL a moment later, to every group still listed. A cgroup would be
//! tighter but needs systemd or root; a forked Rust watchdog would need an async-signal-safe
//! loop in a multi-threaded process. A group that a server leaves on purpose (`setsid`,
//! daemonizing) is beyond both.
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

const SCRIPT: &str = r#"trap '' HUP INT
groups=" "
while read -r line; do
  case "$line" in
    +*) groups="$groups${line#+} " ;;
    -*) groups=$(printf '%s' "$groups" | sed "s/ ${line#-} / /") ;;
  esac
done
[ -z "${groups# }" ] && exit 0
for g in $groups; do kill -TERM -"$g" 2>/dev/null; done
sleep 2
for g in $groups; do kill -KILL -"$g" 2>/dev/null; done
"#;

struct Watchdog {
    stdin: std::process::ChildStdin,
    _child: std::process::Child,
}

fn watchdog() -> Option<&'static Mutex<Watchdog>> {
    static WATCHDOG: OnceLock<Option<Mutex<Watchdog>>> = OnceLock::new();
    WATCHDOG
        .get_or_init(|| {
            let mut command = Command::new("/bin/sh");
            command
                .arg("-c")
                .arg(SCRIPT)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            std::os::unix::process::CommandExt::process_group(&mut command, 0);
            match command.spawn() {
                Ok(mut child) => {
                    let stdin = child.stdin.take()?;
                    Some(Mutex::new(Watchdog {
                        stdin,
                        _child: child,
                    }))
                }
                Err(err) => {
                    tracing::warn!(
                        "cannot start the watchdog that ends servers if rkmcp is killed: {err}"
                    );
                    None
                }
            }
        })
        .as_ref()
}

fn tell(line: String) {
    if let Some(watchdog) = watchdog() {
        let mut w = watchdog.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(err) = w.stdin.write_all(line.as_bytes()) {
            tracing::debug!("watchdog unreachable: {err}");
        }
    }
}

/// A server's process group started: end it if rkmcp dies.
pub fn watch(pgid: u32) {
    tell(format!("+{pgid}\n"));
}

/// The group is gone (its members reaped): forget it, so its number cannot be reused against an
/// unrelated group later.
pub fn forget(pgid: u32) {
    tell(format!("-{pgid}\n"));
}
