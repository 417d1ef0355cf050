//! Remote MCP servers against real peers: legacy HTTP+SSE (server-everything's `sse` mode and a
//! PyPI `mcp` SSE server), `transport = "auto"` falling back from streamable HTTP to SSE,
//! reconnecting a dropped SSE stream, clear errors from broken SSE servers, and OAuth: signing in
//! through `rkmcp auth login` at a real OpenID provider (npm `oidc-provider`) for a PyPI `mcp`
//! server that accepts only its tokens, refresh after expiry, logout with revocation, the client
//! credentials grant, and tokens kept out of every output.
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use rkmcp::config::TransportKind;
use rkmcp::mcp::{NonInteractive, Roots, Session};
use rkmcp_tests::remote_peers::{self, Peer};
use rkmcp_tests::{load_config, rkmcp_command, run_rkmcp, stderr, stdout, toml_str, write};

pub(crate) fn remote_entry(name: &str, url: &str, extra: &str) -> String {
    format!(
        "[[servers]]\nname = {}\nurl = {}\nconnect_timeout = \"20s\"\n{extra}\n",
        toml_str(name),
        toml_str(url)
    )
}

async fn connect(dir: &Path, toml: &str) -> Result<Session, String> {
    let config = load_config(dir, toml);
    let requests = std::sync::Arc::new(NonInteractive::new(Roots::default(), false));
    Session::connect(&config.servers[0], &dir.join("logs"), None, requests)
        .await
        .map_err(|e| e.to_string())
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_string(&result.content).unwrap_or_default()
}

#[tokio::test]
async fn legacy_sse_with_server_everything() {
    let dir = tempfile::tempdir().unwrap();
    let peer = remote_peers::everything_sse(dir.path().join("everything.log"));
    let toml = remote_entry("ev", &peer.url, "transport = \"sse\"");
    let session = connect(dir.path(), &toml).await.unwrap();
    let tools = session.catalog().tools;
    assert!(tools.iter().any(|t| t.name == "echo"), "{tools:?}");
    let mut args = serde_json::Map::new();
    args.insert("message".into(), "over legacy SSE".into());
    let result = session.call_tool("echo", Some(args)).await.unwrap();
    assert!(text_of(&result).contains("over legacy SSE"), "{result:?}");
    session.shutdown().await;
}

#[tokio::test]
async fn auto_falls_back_to_legacy_sse_and_remembers_it() {
    let dir = tempfile::tempdir().unwrap();
    // PyPI `mcp`: POST /sse answers 405.
    let python =
        remote_peers::python_http_server(&["--transport", "sse"], dir.path().join("py.log"));
    let session = connect(dir.path(), &remote_entry("py", &python.url, ""))
        .await
        .unwrap();
    assert_eq!(session.config.transport, TransportKind::Auto);
    assert_eq!(
        rkmcp::mcp::http::auto_choice(&python.url),
        Some(TransportKind::Sse)
    );
    let mut args = serde_json::Map::new();
    args.insert("a".into(), 2.into());
    args.insert("b".into(), 40.into());
    let result = session.call_tool("add", Some(args)).await.unwrap();
    assert!(text_of(&result).contains("42"), "{result:?}");
    session.shutdown().await;

    // server-everything: POST /sse answers 404.
    let everything = remote_peers::everything_sse(dir.path().join("everything.log"));
    let session = connect(dir.path(), &remote_entry("ev", &everything.url, ""))
        .await
        .unwrap();
    assert_eq!(
        rkmcp::mcp::http::auto_choice(&everything.url),
        Some(TransportKind::Sse)
    );
    session.shutdown().await;

    // A streamable HTTP server stays on streamable HTTP.
    let streamable = remote_peers::python_http_server(
        &["--transport", "streamable-http"],
        dir.path().join("py2.log"),
    );
    let session = connect(dir.path(), &remote_entry("py2", &streamable.url, ""))
        .await
        .unwrap();
    assert_eq!(
        rkmcp::mcp::http::auto_choice(&streamable.url),
        Some(TransportKind::Http)
    );
    session.shutdown().await;
}

// Two worker threads: starting the second server blocks this test's thread, and the transport's
// reader must notice the dropped stream meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_sse_reconnects_after_the_server_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let port = rkmcp_tests::free_port().to_string();
    let args = ["--transport", "sse", "--port", port.as_str()];
    let first = remote_peers::python_http_server(&args, dir.path().join("first.log"));
    let toml = remote_entry("py", &first.url, "transport = \"sse\"");
    let session = connect(dir.path(), &toml).await.unwrap();
    let add = |a: i64, b: i64| {
        let mut m = serde_json::Map::new();
        m.insert("a".into(), a.into());
        m.insert("b".into(), b.into());
        Some(m)
    };
    assert!(text_of(&session.call_tool("add", add(1, 2)).await.unwrap()).contains('3'));
    // The stream drops; a new server process on the same port knows nothing of our session.
    first.stop();
    let _second = remote_peers::python_http_server(&args, dir.path().join("second.log"));
    let result = session.call_tool("add", add(20, 3)).await;
    let result = result.unwrap_or_else(|e| panic!("after reconnecting: {e}"));
    assert!(text_of(&result).contains("23"), "{result:?}");
    session.shutdown().await;
}

/// A broken "server": answers every connection with `response` and closes. Real servers do not
/// misbehave on demand; this one stands in for a misconfigured proxy or a non-MCP endpoint.
fn broken_server(response: &'static str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    format!("http://127.0.0.1:{port}/sse")
}

#[tokio::test]
async fn broken_sse_servers_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nevent: message\ndata: {}\n\n",
            "ended before the server sent its `endpoint` event",
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nevent: endpoint\ndata: http://evil.example:9/messages\n\n",
            "another origin",
        ),
        (
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
            "did not answer with an event stream",
        ),
        (
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\noops",
            "HTTP 500",
        ),
    ];
    for (response, expected) in cases {
        let url = broken_server(response);
        let err = connect(
            dir.path(),
            &remote_entry("bad", &url, "transport = \"sse\""),
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("connected to a broken server ({expected})"));
        assert!(err.contains(expected), "{expected}: {err}");
        assert!(err.contains("server `bad`"), "{err}");
        assert!(err.contains(&url) || expected == "another origin", "{err}");
    }
}

/// The provider, a PyPI `mcp` server that accepts only its tokens, and a config naming it.
pub(crate) struct SignInSetup {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) provider: Peer,
    pub(crate) server: Peer,
}

pub(crate) fn sign_in_setup(access_ttl: u64, auth_toml: &str) -> SignInSetup {
    let dir = tempfile::tempdir().unwrap();
    let provider = remote_peers::oidc_provider(access_ttl, dir.path().join("provider.log"));
    let server = remote_peers::python_http_server(
        &["--transport", "streamable-http", "--issuer", &provider.url],
        dir.path().join("server.log"),
    );
    write(
        dir.path(),
        "rkmcp.toml",
        &remote_entry("secure", &server.url, auth_toml),
    );
    SignInSetup {
        dir,
        provider,
        server,
    }
}

pub(crate) fn credentials_file(home: &Path) -> std::path::PathBuf {
    home.join("state/rkmcp/auth/credentials.json")
}

/// The access and refresh tokens in the store (to prove they appear nowhere else).
pub(crate) fn stored_tokens(home: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(credentials_file(home)).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut tokens = Vec::new();
    for e in json["entries"].as_array().cloned().unwrap_or_default() {
        let t = &e["credentials"]["token_response"];
        for key in ["access_token", "refresh_token"] {
            if let Some(s) = t[key].as_str() {
                tokens.push(s.to_string());
            }
        }
    }
    tokens
}

fn assert_no_tokens(tokens: &[String], what: &str, text: &str) {
    for t in tokens {
        assert!(!text.contains(t.as_str()), "a token appears in {what}");
    }
}

/// `rkmcp auth login secure`, the "browser" a person who approves everything; it must succeed.
pub(crate) fn login_with_the_approving_browser(home: &Path) -> std::process::Output {
    let out = rkmcp_command(home, &["auth", "login", "secure"])
        .env("BROWSER", remote_peers::approving_browser())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "login failed: {}", stderr(&out));
    out
}

#[test]
fn sign_in_call_refresh_and_logout_at_a_real_openid_provider() {
    let s = sign_in_setup(3, "");
    let home = s.dir.path();

    // Before signing in, the server refuses us and the error names the command to run.
    let out = run_rkmcp(home, &["tools", "list"]);
    let err = stderr(&out);
    assert!(err.contains("rkmcp auth login secure"), "{err}");

    // Sign in; the "browser" follows the redirects back to rkmcp's loopback listener.
    let out = login_with_the_approving_browser(home);
    assert!(
        stderr(&out).contains("Signed in to `secure`"),
        "{}",
        stderr(&out)
    );
    let tokens = stored_tokens(home);
    assert_eq!(tokens.len(), 2, "an access and a refresh token are stored");
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&credentials_file(home)), 0o600);
    assert_eq!(mode(credentials_file(home).parent().unwrap()), 0o700);

    // A tool call with the token, logged at trace level: the log never shows the token.
    let out = run_rkmcp(
        home,
        &["-vvv", "tools", "call", "secure__add", "a=2", "b=3"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains('5'), "{}", stdout(&out));
    assert_no_tokens(&tokens, "the trace log", &stderr(&out));

    // A turn with the local model that calls the server: its transcript (`ask --json`) shows
    // neither the token it was made with nor one refreshed on the way.
    let out = run_rkmcp(
        home,
        &[
            "ask",
            "--json",
            "--yes",
            "--tool-choice",
            "required",
            "--max-tokens",
            "48",
            "--temperature",
            "0",
            "--ctx",
            "2048",
            "Add 2 and 3.",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let transcript = stdout(&out);
    assert!(transcript.contains("secure__"), "no call in {transcript}");
    let mut seen = tokens.clone();
    seen.extend(stored_tokens(home));
    assert_no_tokens(&seen, "the transcript", &transcript);
    assert_no_tokens(&seen, "ask's stderr", &stderr(&out));

    // Status names server, issuer and scopes, never a token.
    for args in [&["auth", "status"][..], &["--json", "auth", "status"][..]] {
        let out = run_rkmcp(home, args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains("secure") && text.contains(&s.provider.url),
            "{text}"
        );
        assert!(text.contains("mcp:tools"), "{text}");
        assert_no_tokens(&tokens, "auth status", &text);
    }

    // After the access token expired, the next run refreshes it and goes on working.
    std::thread::sleep(Duration::from_secs(4));
    let out = run_rkmcp(home, &["tools", "call", "secure__echo", "text=still here"]);
    assert!(out.status.success(), "after expiry: {}", stderr(&out));
    assert!(stdout(&out).contains("still here"));
    assert!(
        s.provider
            .log_text()
            .contains("grant.success refresh_token"),
        "no refresh at the provider: {}",
        s.provider.log_text()
    );
    let refreshed = stored_tokens(home);
    assert_ne!(
        refreshed[0], tokens[0],
        "the stored access token was replaced"
    );

    // Logout revokes at the provider and forgets the tokens.
    let out = run_rkmcp(home, &["auth", "logout", "secure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        s.provider.log_text().contains("grant.revoked")
            && !s.provider.log_text().contains("revocation.error"),
        "no revocation at the provider: {}\n{}",
        stderr(&out),
        s.provider.log_text()
    );
    assert!(stored_tokens(home).is_empty());
    let out = run_rkmcp(home, &["tools", "list"]);
    assert!(
        stderr(&out).contains("rkmcp auth login secure"),
        "{}",
        stderr(&out)
    );
    drop(s.server);
}

#[test]
fn tokens_move_into_the_os_keyring_and_live_there() {
    let s = sign_in_setup(3, "");
    let home = s.dir.path();
    // Signed in where there was no keyring: the tokens are in the file.
    login_with_the_approving_browser(home);
    let tokens = stored_tokens(home);
    assert_eq!(tokens.len(), 2, "an access and a refresh token are stored");

    let keyring = remote_peers::keyring(&home.join("keyring"));
    let with_keyring = |args: &[&str]| {
        rkmcp_command(home, args)
            .env("RKMCP_TOKEN_STORE", "auto")
            .env("DBUS_SESSION_BUS_ADDRESS", &keyring.address)
            .output()
            .unwrap()
    };
    let ours = [("application", "rkmcp"), ("kind", "oauth-sign-in")];

    // The first run that finds a keyring moves the sign-in into it and deletes the file.
    let out = with_keyring(&["auth", "status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("moved 1 sign-in(s)"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("secure"), "{}", stdout(&out));
    assert!(stdout(&out).contains("OS keyring"), "{}", stdout(&out));
    assert_no_tokens(&tokens, "auth status", &stdout(&out));
    assert!(!credentials_file(home).exists(), "the file was left behind");
    let stored = keyring.search(&ours);
    assert!(
        stored.contains(&tokens[0]) && stored.contains(&s.server.url),
        "libsecret does not see the sign-in: {stored}"
    );

    // After expiry a call refreshes, and the new tokens are saved in the keyring, not a file.
    std::thread::sleep(Duration::from_secs(4));
    let out = with_keyring(&["tools", "call", "secure__echo", "text=from the keyring"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("from the keyring"));
    let stored = keyring.search(&ours);
    assert!(!stored.contains(&tokens[0]), "not refreshed: {stored}");
    assert!(stored.contains("access_token"), "{stored}");
    assert!(!credentials_file(home).exists());

    // A keyring asked for by name that is not there is an error saying what to do.
    let out = rkmcp_command(home, &["auth", "status"])
        .env("RKMCP_TOKEN_STORE", "keyring")
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("there is no OS keyring") && err.contains("RKMCP_TOKEN_STORE=auto"),
        "{err}"
    );

    // Logout deletes the item.
    let out = with_keyring(&["auth", "logout", "secure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stored = keyring.search(&ours);
    assert!(
        !stored.contains("access_token"),
        "left in the keyring: {stored}"
    );
}

#[test]
fn client_credentials_sign_in_basic_and_post() {
    for (client, secret, method) in [
        (
            "rkmcp-machine-basic",
            "machine-basic-secret",
            "client_secret_basic",
        ),
        (
            "rkmcp-machine-post",
            "machine-post-secret",
            "client_secret_post",
        ),
    ] {
        let auth = format!(
            "[servers.auth]\ngrant = \"client_credentials\"\nclient_id = \"{client}\"\nclient_secret = \"${{MACHINE_SECRET}}\"\ntoken_endpoint_auth_method = \"{method}\"\nscopes = [\"mcp:tools\"]\n"
        );
        let s = sign_in_setup(3600, &auth);
        let home = s.dir.path();
        let out = rkmcp_command(home, &["tools", "call", "secure__add", "a=20", "b=22"])
            .env("MACHINE_SECRET", secret)
            .output()
            .unwrap();
        assert!(out.status.success(), "{method}: {}", stderr(&out));
        assert!(stdout(&out).contains("42"), "{}", stdout(&out));
        // Nothing is stored for a machine client.
        assert!(!credentials_file(home).exists());

        // The secret never shows in `config check`, plain or JSON.
        for args in [&["config", "check"][..], &["--json", "config", "check"][..]] {
            let out = rkmcp_command(home, args)
                .env("MACHINE_SECRET", secret)
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            assert!(!stdout(&out).contains(secret), "{}", stdout(&out));
        }

        // A wrong secret: the error names the step, the token URL and the provider's error.
        let out = rkmcp_command(home, &["tools", "list"])
            .env("MACHINE_SECRET", "wrong")
            .output()
            .unwrap();
        let err = stderr(&out);
        assert!(err.contains("token request"), "{err}");
        assert!(err.contains(&format!("{}/token", s.provider.url)), "{err}");
        assert!(err.contains("invalid_client"), "{err}");
        assert!(!err.contains("wrong"), "{err}");
    }
}

#[test]
fn static_bearer_token_from_the_environment() {
    let s = sign_in_setup(
        3600,
        "[servers.auth]\nbearer_token_env = \"SECURE_TOKEN\"\n",
    );
    let home = s.dir.path();
    let out = run_rkmcp(home, &["tools", "list"]);
    assert!(
        stderr(&out).contains("environment variable `SECURE_TOKEN`"),
        "{}",
        stderr(&out)
    );
    let out = rkmcp_command(home, &["tools", "list"])
        .env("SECURE_TOKEN", "not-a-real-token")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(!err.contains("not-a-real-token"), "{err}");
}

#[test]
fn device_code_sign_in() {
    let s = sign_in_setup(3600, "");
    let home = s.dir.path();
    let mut child = rkmcp_command(home, &["auth", "login", "secure", "--device"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr_pipe = child.stderr.take().unwrap();
    let mut said = String::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(stderr_pipe)) {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        // The person opens the page on their phone and confirms the code.
        if let Some(url) = line
            .trim()
            .strip_prefix("(or open ")
            .and_then(|u| u.strip_suffix(')'))
        {
            let python = remote_peers::plugin_python();
            let browser = rkmcp_tests::repo().join("tests/servers/approving_browser.py");
            let status = std::process::Command::new(python)
                .arg(browser)
                .arg(url)
                .status()
                .unwrap();
            assert!(status.success());
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{said}");
    assert!(said.contains("enter the code"), "{said}");
    assert!(said.contains("Signed in to `secure`"), "{said}");
    let out = run_rkmcp(home, &["tools", "call", "secure__add", "a=1", "b=1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains('2'));
}
