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

/// A real OS keyring: GNOME Keyring's Secret Service on a private D-Bus session bus, its login
/// keyring created and unlocked in `dir`. Nothing of the user's own session is touched: the bus
/// has no service activation, and the daemon's home is `dir`.
pub struct Keyring {
    bus: Child,
    daemon: Child,
    /// `DBUS_SESSION_BUS_ADDRESS` for clients of this keyring.
    pub address: String,
}

const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=DIR</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

pub fn keyring(dir: &std::path::Path) -> Keyring {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    for tool in ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "{tool} is missing: run scripts/setup"
        );
    }
    let run = dir.join("run");
    std::fs::create_dir_all(&run).expect("keyring dir");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let config = dir.join("bus.conf");
    std::fs::write(
        &config,
        BUS_CONFIG.replace("DIR", &run.display().to_string()),
    )
    .expect("bus config");
    let mut bus = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", config.display()))
        .args(["--nofork", "--print-address=1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("cannot start dbus-daemon");
    let mut first_line = String::new();
    BufReader::new(bus.stdout.take().expect("stdout piped"))
        .read_line(&mut first_line)
        .expect("dbus-daemon's address");
    let address = first_line.trim().to_string();
    assert!(address.starts_with("unix:"), "dbus-daemon said {address:?}");
    let home = dir.join("home");
    let log = std::fs::File::create(dir.join("gnome-keyring.log")).expect("keyring log");
    let mut daemon = Command::new("gnome-keyring-daemon")
        .args(["--unlock", "--components=secrets", "--foreground"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_RUNTIME_DIR", &run)
        .env("DBUS_SESSION_BUS_ADDRESS", &address)
        .stdin(Stdio::piped())
        .stdout(log.try_clone().expect("keyring log"))
        .stderr(log)
        .spawn()
        .expect("cannot start gnome-keyring-daemon");
    // The login keyring's password; closing stdin ends it.
    let mut stdin = daemon.stdin.take().expect("stdin piped");
    stdin.write_all(b"test-password").expect("unlock");
    drop(stdin);
    let keyring = Keyring {
        bus,
        daemon,
        address,
    };
    let started = Instant::now();
    while !keyring.has_secret_service() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "gnome-keyring-daemon did not come up: {}",
            std::fs::read_to_string(dir.join("gnome-keyring.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    keyring
}

impl Keyring {
    fn has_secret_service(&self) -> bool {
        Command::new("dbus-send")
            .args([
                "--session",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/",
                "org.freedesktop.DBus.NameHasOwner",
                "string:org.freedesktop.secrets",
            ])
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("boolean true"))
    }

    /// `secret-tool search --all KEY VALUE …`: every matching item with its secret, as libsecret
    /// (not rkmcp) reads them.
    pub fn search(&self, attributes: &[(&str, &str)]) -> String {
        let mut cmd = Command::new("secret-tool");
        cmd.args(["search", "--all"]);
        for (k, v) in attributes {
            cmd.args([k, v]);
        }
        let out = cmd
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .output()
            .expect("cannot run secret-tool");
        // secret-tool prints the attributes on stderr and the secret on stdout.
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        for child in [&mut self.daemon, &mut self.bus] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
