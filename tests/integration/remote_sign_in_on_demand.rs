//! Signing in when a server asks, through the `rkmcp` binary at a terminal (a pseudo-terminal
//! driven with `rexpect`, the "browser" a script that approves everything) and without one:
//! - a 401 with no stored sign-in;
//! - a step-up on 403 `insufficient_scope`, asking for the granted and the required scopes;
//! - a server whose resource metadata now names another authorization server than the one the
//!   person signed in at: registered and signed in anew there, the old client never sent to it.
//!
//! Real peers: two npm `oidc-provider`s and a PyPI `mcp` server that checks tokens by
//! introspection and wants the `mcp:admin` scope for one tool (`admin_stats`).
use std::path::Path;
use std::time::Duration;

use rexpect::process::WaitStatus;
use rexpect::session::PtySession;
use rkmcp_tests::remote_peers::{self, Peer};
use rkmcp_tests::*;

use crate::remote::{credentials_file, login_with_the_approving_browser, remote_entry};

const ENTER: &str = "\r";

/// The test server on `port` (0: any), accepting tokens from `issuer`.
fn mcp_server(dir: &Path, issuer: &str, port: u16, log: &str) -> Peer {
    remote_peers::python_http_server(
        &[
            "--transport",
            "streamable-http",
            "--issuer",
            issuer,
            "--admin-scope",
            "mcp:admin",
            "--port",
            &port.to_string(),
        ],
        dir.join(log),
    )
}

/// `rkmcp ARGS` at a terminal, with the approving "browser".
fn at_terminal(home: &Path, args: &[&str]) -> PtySession {
    let mut cmd = rkmcp_command(home, args);
    cmd.env("BROWSER", remote_peers::approving_browser());
    on_terminal(cmd, Duration::from_secs(90))
}

/// Waits for `reason`, says yes to "Sign in now?", and waits for the sign-in to finish.
fn agree_to_sign_in(p: &mut PtySession, reason: &str) {
    p.exp_string(reason)
        .unwrap_or_else(|e| panic!("the reason `{reason}` was not shown: {e}"));
    p.exp_string("Sign in now?")
        .unwrap_or_else(|e| panic!("no question: {e}"));
    for key in ["y", ENTER] {
        p.send(key).unwrap();
        p.flush().unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    p.exp_string("Signed in to `secure`")
        .unwrap_or_else(|e| panic!("the sign-in did not finish: {e}"));
}

/// Waits for `text` in the output, then for the command to exit with code 0.
fn succeeds_with(mut p: PtySession, text: &str) {
    p.exp_string(text)
        .unwrap_or_else(|e| panic!("`{text}` was not printed: {e}"));
    let rest = p.exp_eof().unwrap_or_default();
    assert!(
        matches!(p.process().wait(), Ok(WaitStatus::Exited(_, 0))),
        "the command failed after printing `{text}`: {rest}"
    );
}

/// Runs `rkmcp ARGS` without a terminal; it must fail with exit code 1 and one line naming
/// every `expected` piece. Returns that line.
fn fails_with_one_line(home: &Path, args: &[&str], expected: &[&str]) -> String {
    let out = rkmcp_command(home, args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| expected.iter().all(|e| l.contains(e)))
        .collect();
    assert_eq!(lines.len(), 1, "expected one line with {expected:?}: {err}");
    lines[0].to_string()
}

fn credentials(home: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(credentials_file(home)).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    json["entries"].as_array().cloned().unwrap_or_default()
}

fn granted_scopes(home: &Path) -> Vec<String> {
    credentials(home)
        .iter()
        .flat_map(|e| {
            e["credentials"]["granted_scopes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|s| s.as_str().map(String::from))
        .collect()
}

fn client_id(home: &Path) -> String {
    let entries = credentials(home);
    assert_eq!(entries.len(), 1, "one stored sign-in: {entries:?}");
    entries[0]["credentials"]["client_id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_missing_sign_in_and_a_step_up_are_offered_at_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let provider = remote_peers::oidc_provider(3600, home.join("provider.log"));
    let server = mcp_server(home, &provider.url, 0, "server.log");
    write(home, "rkmcp.toml", &remote_entry("secure", &server.url, ""));

    // Without a terminal: one line with the exact command, exit code 1.
    fails_with_one_line(
        home,
        &["tools", "call", "secure__echo", "text=hi"],
        &["rkmcp auth login secure"],
    );

    // At a terminal: the person is asked, signs in, and the call goes through.
    let mut p = at_terminal(
        home,
        &["tools", "call", "secure__echo", "text=after the sign-in"],
    );
    agree_to_sign_in(&mut p, "server `secure` needs you to sign in");
    succeeds_with(p, "after the sign-in");
    let granted = granted_scopes(home);
    assert!(
        granted.contains(&"mcp:tools".to_string()) && !granted.contains(&"mcp:admin".to_string()),
        "{granted:?}"
    );

    // The admin tool needs more scope. Without a terminal: the command asks for the granted
    // scopes and the new one together.
    let line = fails_with_one_line(
        home,
        &["tools", "call", "secure__admin_stats"],
        &["needs more access", "rkmcp auth login secure"],
    );
    assert!(
        line.contains("--scope mcp:tools") && line.contains("--scope mcp:admin"),
        "{line}"
    );

    // At a terminal: step-up with the union, then the call is retried and goes through.
    let mut p = at_terminal(home, &["tools", "call", "secure__admin_stats"]);
    agree_to_sign_in(&mut p, "it asks for mcp:admin (you granted mcp:tools");
    succeeds_with(p, "calls served: 42");
    let granted = granted_scopes(home);
    assert!(
        granted.contains(&"mcp:tools".to_string()) && granted.contains(&"mcp:admin".to_string()),
        "the step-up kept the granted scope and added the new one: {granted:?}"
    );

    // The stored sign-in now serves both tools without asking.
    let out = run_rkmcp(home, &["tools", "call", "secure__admin_stats"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("calls served: 42"),
        "{}",
        stdout(&out)
    );

    // A "no" at the terminal is a refusal with the command, and is not asked again.
    let out = run_rkmcp(home, &["auth", "logout", "secure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut p = at_terminal(home, &["tools", "call", "secure__echo", "text=x"]);
    p.exp_string("Sign in now?").unwrap();
    for key in ["n", ENTER] {
        p.send(key).unwrap();
        p.flush().unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let rest = p.exp_eof().unwrap_or_default();
    assert!(rest.contains("rkmcp auth login secure"), "{rest}");
    // (inquire redraws its prompt line as it is answered; a second question would show the
    // reason again.)
    assert!(
        !rest.contains("needs you to sign in."),
        "asked twice: {rest}"
    );
    assert!(matches!(p.process().wait(), Ok(WaitStatus::Exited(_, 1))));
}

#[test]
fn a_new_authorization_server_gets_a_new_sign_in_and_never_the_old_client() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let first = remote_peers::oidc_provider(3600, home.join("first.log"));
    let second = remote_peers::oidc_provider(3600, home.join("second.log"));
    let port = free_port();
    let server = mcp_server(home, &first.url, port, "server-1.log");
    write(home, "rkmcp.toml", &remote_entry("secure", &server.url, ""));
    login_with_the_approving_browser(home);
    let first_client = client_id(home);

    // The server moves to the second provider.
    server.stop();
    let server = mcp_server(home, &second.url, port, "server-2.log");

    // Without a terminal: the error says the authorization server changed, and how to sign in.
    let line = fails_with_one_line(
        home,
        &["tools", "call", "secure__echo", "text=x"],
        &["authorization server changed", "rkmcp auth login secure"],
    );
    assert!(
        line.contains(&first.url) && line.contains(&second.url),
        "{line}"
    );

    // rmcp dropped the old tokens with that, so at a terminal this is a plain sign-in, at the
    // second provider, with a client registered there.
    let mut p = at_terminal(
        home,
        &[
            "tools",
            "call",
            "secure__echo",
            "text=signed in at the second",
        ],
    );
    agree_to_sign_in(&mut p, "server `secure` needs you to sign in");
    succeeds_with(p, "signed in at the second");
    let second_client = client_id(home);
    assert_ne!(first_client, second_client);

    // Back to the first provider, at a terminal: the change is named, a new sign-in there.
    server.stop();
    let _server = mcp_server(home, &first.url, port, "server-3.log");
    let mut p = at_terminal(
        home,
        &["tools", "call", "secure__echo", "text=back at the first"],
    );
    agree_to_sign_in(
        &mut p,
        &format!(
            "the authorization server of `secure` changed from {} to {}",
            second.url, first.url
        ),
    );
    succeeds_with(p, "back at the first");

    // Neither provider ever saw the other's client.
    assert!(
        second.log_text().contains(&second_client),
        "the provider log names its clients: {}",
        second.log_text()
    );
    assert!(
        !second.log_text().contains(&first_client),
        "the first provider's client reached the second: {}",
        second.log_text()
    );
    assert!(
        !first.log_text().contains(&second_client),
        "the second provider's client reached the first: {}",
        first.log_text()
    );
}
