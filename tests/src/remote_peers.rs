//! Real peers for the remote-server tests, each a child process killed when dropped:
//! server-everything's legacy SSE mode, MCP servers written with PyPI `mcp` over HTTP
//! (`tests/servers/http_mcp_server.py`), and the OpenID provider (`tests/servers/oidc_provider.mjs`).
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running peer; its stdin is held open (the scripts exit when it closes).
pub struct Peer {
    child: Child,
    /// The URL the peer serves.
    pub url: String,
    /// Where its stderr goes.
    pub log: PathBuf,
}

impl Peer {
    /// Starts `cmd` and waits (up to 60 s) for its `LISTENING <url>` line on stdout.
    pub fn start_listening(mut cmd: Command, log: PathBuf) -> Peer {
        let log_file = std::fs::File::create(&log).expect("peer log");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("LISTENING ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "{cmd:?} did not start; its stderr:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
        };
        Peer { child, url, log }
    }

    /// Starts `cmd`, which listens on `port` and says nothing useful, and waits until the port
    /// accepts connections.
    pub fn start_on_port(mut cmd: Command, port: u16, url: String, log: PathBuf) -> Peer {
        let log_file = std::fs::File::create(&log).expect("peer log");
        let log_out = log_file.try_clone().expect("peer log");
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(log_out)
            .stderr(log_file)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{cmd:?} did not listen on {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Peer { child, url, log }
    }

    /// What the peer wrote to stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the peer now.
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python of the venv with PyPI `mcp` 2.x.
pub fn plugin_python() -> PathBuf {
    let python = crate::deps().join("venv-plugins/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup",
        python.display()
    );
    python
}

/// `tests/servers/http_mcp_server.py` with `args`.
pub fn python_http_server(args: &[&str], log: PathBuf) -> Peer {
    let mut cmd = Command::new(plugin_python());
    cmd.arg(crate::repo().join("tests/servers/http_mcp_server.py"))
        .args(args);
    Peer::start_listening(cmd, log)
}

/// server-everything in legacy SSE mode on a free port; its URL ends in `/sse`.
pub fn everything_sse(log: PathBuf) -> Peer {
    let (node, args) = crate::everything_cmd();
    let port = crate::free_port();
    let mut cmd = Command::new(node);
    cmd.args(args).arg("sse").env("PORT", port.to_string());
    Peer::start_on_port(cmd, port, format!("http://127.0.0.1:{port}/sse"), log)
}

/// The OpenID provider; access tokens live `access_ttl` seconds.
pub fn oidc_provider(access_ttl: u64, log: PathBuf) -> Peer {
    let dir = crate::deps().join("oidc-provider");
    assert!(
        dir.join("node_modules/oidc-provider").exists(),
        "{} is missing: run scripts/setup",
        dir.display()
    );
    let mut cmd = Command::new("node");
    cmd.arg(crate::repo().join("tests/servers/oidc_provider.mjs"))
        .arg(&dir)
        .args(["--access-ttl", &access_ttl.to_string()]);
    Peer::start_listening(cmd, log)
}

/// `$BROWSER` for `rkmcp auth login`: a stand-in for a person who approves everything.
pub fn approving_browser() -> String {
    format!(
        "{} {}",
        plugin_python().display(),
        crate::repo()
            .join("tests/servers/approving_browser.py")
            .display()
    )
}
