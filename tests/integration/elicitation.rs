//! Elicitation forms at a real terminal (a pseudo-terminal driven with `rexpect`) and without
//! one, through the `rkmcp` binary, against our PyPI `mcp` server with every field type and
//! defaults (tests/servers/client_requests.py) and server-everything's
//! `trigger-elicitation-request` (listed only to clients that declare elicitation).
//!
//! Keys: Enter accepts a prompt as shown (the schema's default filled in), ↓ moves a selection,
//! backspace edits a pre-filled value, Esc cancels the form. Fields come in property-name order.
use rexpect::session::PtySession;
use rkmcp_tests::*;
use serde_json::Value;

const ENTER: &str = "\r";
const DOWN: &str = "\x1b[B";
const ESC: &str = "\x1b";
const BACKSPACE: &str = "\x7f";

fn client_requests_config(home: &std::path::Path) -> String {
    let python = deps().join("venv-plugins/bin/python");
    let script = repo().join("tests/servers/client_requests.py");
    let toml = stdio_entry(
        "client",
        &python.display().to_string(),
        &[script.display().to_string()],
        // 2025-11-25: this server elicits in the middle of a tool call, which a 2026-07-28
        // (stateless) session has no back-channel for.
        "protocol = \"2025-11-25\"",
    );
    write(home, "rkmcp.toml", &toml).display().to_string()
}

fn everything_config(home: &std::path::Path) -> String {
    let (node, mut args) = everything_cmd();
    args.push("stdio".into());
    let toml = stdio_entry("everything", &node, &args, "");
    write(home, "rkmcp.toml", &toml).display().to_string()
}

/// `rkmcp ARGS` on a pseudo-terminal.
fn on_terminal(home: &std::path::Path, args: &[&str]) -> PtySession {
    rkmcp_tests::on_terminal(
        rkmcp_command(home, args),
        std::time::Duration::from_secs(30),
    )
}

/// Waits for a question, then answers it.
fn answer(p: &mut PtySession, question: &str, keys: &[&str]) {
    p.exp_string(question)
        .unwrap_or_else(|e| panic!("no question `{question}`: {e}"));
    for k in keys {
        p.send(k).unwrap();
        p.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The JSON object the tool returned, from everything rkmcp printed.
fn tool_json(output: &str) -> Value {
    let start = output
        .rfind("{\"action\"")
        .unwrap_or_else(|| panic!("no result in: {output}"));
    serde_json::Deserializer::from_str(&output[start..])
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON result in: {output}"))
}

#[test]
fn a_form_with_every_field_type_is_filled_in_at_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let config = client_requests_config(home.path());
    let mut p = on_terminal(
        home.path(),
        &["--config", &config, "tools", "call", "client/register"],
    );
    answer(&mut p, "Please register", &[]);
    answer(&mut p, "Answer it?", &[ENTER]);
    // Pre-filled with 36: replace it.
    answer(&mut p, "age *", &[BACKSPACE, BACKSPACE, "41", ENTER]);
    answer(&mut p, "born", &[ENTER]);
    answer(&mut p, "colour", &[ENTER]);
    answer(&mut p, "Email *", &[ENTER]);
    answer(&mut p, "height", &[ENTER]);
    answer(&mut p, "homepage", &[ENTER]);
    answer(&mut p, "legacy", &[ENTER]);
    answer(&mut p, "meeting", &[ENTER]);
    answer(&mut p, "Your name *", &[ENTER]);
    answer(&mut p, "Pets", &[ENTER]);
    // Default Medium; one down is Large.
    answer(&mut p, "Size", &[DOWN, ENTER]);
    answer(&mut p, "Subscribe", &["y", ENTER]);
    answer(&mut p, "tags", &[ENTER]);
    answer(&mut p, "Send this to `client`?", &[ENTER]);
    let output = p.exp_eof().unwrap();
    let result = tool_json(&output);
    assert_eq!(result["action"], "accept", "{output}");
    let c = &result["content"];
    assert_eq!(c["age"], 41);
    assert_eq!(c["name"], "Ada Lovelace");
    assert_eq!(c["email"], "ada@example.org");
    assert_eq!(c["homepage"], "https://example.org/ada");
    assert_eq!(c["born"], "1815-12-10");
    assert_eq!(c["meeting"], "2026-11-24T05:00:00Z");
    assert_eq!(c["height"], 1.65);
    assert_eq!(c["colour"], "green");
    assert_eq!(c["size"], "l");
    assert_eq!(c["legacy"], "a");
    assert_eq!(c["subscribe"], true);
    assert_eq!(c["tags"], serde_json::json!(["x", "z"]));
    assert_eq!(c["pets"], serde_json::json!(["dog"]));
}

#[test]
fn esc_cancels_the_form_and_a_bad_answer_is_asked_again() {
    let home = tempfile::tempdir().unwrap();
    let config = client_requests_config(home.path());
    let mut p = on_terminal(
        home.path(),
        &["--config", &config, "tools", "call", "client/register"],
    );
    answer(&mut p, "Answer it?", &[ENTER]);
    // 200 is over the schema's maximum: the prompt says so and stays.
    answer(&mut p, "age *", &[BACKSPACE, BACKSPACE, "200", ENTER]);
    p.exp_string("150").expect("the bound was not named");
    p.send(ESC).unwrap();
    p.flush().unwrap();
    let output = p.exp_eof().unwrap();
    assert_eq!(tool_json(&output)["action"], "cancel", "{output}");
}

/// server-everything (TypeScript SDK) has 2025-11-25 tasks, but its tools do not declare
/// `execution.taskSupport`. rkmcp once called every tool of such a server as a task: the server
/// ran the tool (and its form) anyway, failed the call, and rkmcp's plain retry ran it again, so
/// every form was asked twice. A tool runs once.
#[test]
fn a_tool_of_a_server_with_tasks_runs_once_when_it_does_not_offer_tasks() {
    let home = tempfile::tempdir().unwrap();
    let config = everything_config(home.path());
    let out = run_rkmcp(
        home.path(),
        &[
            "--config",
            &config,
            "--accept-defaults",
            "tools",
            "call",
            "everything/trigger-elicitation-request",
        ],
    );
    let err = stderr(&out);
    assert_eq!(
        err.matches("server `everything` asked").count(),
        1,
        "the form was asked for more than once: {err}"
    );
    assert!(stdout(&out).contains("declined"), "{}", stdout(&out));
}

#[test]
fn server_everything_elicitation_is_answered_at_the_terminal() {
    let home = tempfile::tempdir().unwrap();
    let config = everything_config(home.path());
    let mut p = on_terminal(
        home.path(),
        &[
            "--config",
            &config,
            "tools",
            "call",
            "everything/trigger-elicitation-request",
        ],
    );
    answer(&mut p, "Answer it?", &[ENTER]);
    answer(&mut p, "String with date format", &[ENTER]);
    answer(&mut p, "Boolean", &["y", ENTER]);
    answer(
        &mut p,
        "String with email format",
        &["ada@example.org", ENTER],
    );
    answer(&mut p, "String with default", &[ENTER]);
    answer(&mut p, "String with uri format", &[ENTER]);
    answer(&mut p, "Integer", &[ENTER]);
    answer(&mut p, "Legacy Titled Single Select Enum", &[DOWN, ENTER]);
    answer(&mut p, "String *", &["Ada Lovelace", ENTER]);
    answer(&mut p, "Number in range 1-1000", &[ENTER]);
    answer(&mut p, "Titled Multiple Select Enum", &[ENTER]);
    answer(&mut p, "Titled Single Select Enum", &[ENTER]);
    answer(&mut p, "Untitled Multiple Select Enum", &[ENTER]);
    answer(&mut p, "Untitled Single Select Enum", &[ENTER]);
    answer(&mut p, "Send this to `everything`?", &[ENTER]);
    let output = p.exp_eof().unwrap();
    assert!(
        output.contains("User provided the requested information"),
        "{output}"
    );
    assert!(output.contains("Ada Lovelace"), "{output}");
    assert!(output.contains("ada@example.org"), "{output}");
}

#[test]
fn without_a_terminal_a_form_is_declined_with_a_notice_or_accepted_with_defaults() {
    let home = tempfile::tempdir().unwrap();
    let config = client_requests_config(home.path());
    let out = run_rkmcp(
        home.path(),
        &["--config", &config, "tools", "call", "client/register"],
    );
    assert_eq!(tool_json(&stdout(&out))["action"], "decline");
    assert!(
        stderr(&out).contains("--accept-defaults"),
        "{}",
        stderr(&out)
    );
    let out = run_rkmcp(
        home.path(),
        &[
            "--config",
            &config,
            "--accept-defaults",
            "tools",
            "call",
            "client/register",
        ],
    );
    let result = tool_json(&stdout(&out));
    assert_eq!(result["action"], "accept", "{}", stderr(&out));
    assert_eq!(result["content"]["age"], 36);
    assert_eq!(result["content"]["size"], "m");
    assert_eq!(result["content"]["tags"], serde_json::json!(["x", "z"]));
}

#[test]
fn a_url_visit_is_shown_and_its_completion_notification_is_waited_for() {
    let home = tempfile::tempdir().unwrap();
    let config = client_requests_config(home.path());
    let mut p = on_terminal(
        home.path(),
        &["--config", &config, "tools", "call", "client/visit"],
    );
    p.exp_string("https://example.org/sign-in")
        .expect("the URL was not shown");
    // "open it in the browser" is first; one down is "I'll open it myself".
    answer(&mut p, "Go there?", &[DOWN, ENTER]);
    // The server sends notifications/elicitation/complete for elicit-1 after the accept.
    p.exp_string("confirms the visit to https://example.org/sign-in is complete")
        .expect("the completion notification was not reported");
    let output = p.exp_eof().unwrap();
    assert_eq!(tool_json(&output)["action"], "accept", "{output}");
}
