//! `ask` starts its first round from the tool list remembered from the last run with the same
//! servers, while they start (host/crates/chat/src/remembered.rs, engine/early.rs): with the real
//! embedded model and the real `mcp-server-time` (its clock stopped), started through a shell
//! script the tests rewrite between runs, so the configuration stays the same while the server
//! changes, slows down or fails.
use std::path::Path;

use rkmcp_tests::*;
use serde_json::Value;

const TOKYO: &str = "What is the current time in the Asia/Tokyo timezone?";
const STOPPED_AT: &str = "2031-05-17T03:42:08Z";

/// Writes `home/server.sh`, which starts the time server after `before` (shell), and the
/// config that runs it. The config never changes; the script does.
fn server_script(home: &Path, before: &str, timezone: &str) -> String {
    let (python, args) = time_server_at(STOPPED_AT, &["--local-timezone", timezone]);
    let args: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    write(
        home,
        "server.sh",
        &format!("{before}\nexec '{python}' {}\n", args.join(" ")),
    );
    let script = home.join("server.sh").display().to_string();
    let toml = stdio_entry("time", "sh", &[script], "");
    write(home, "rkmcp.toml", &toml).display().to_string()
}

/// `ask --json` of TOKYO; the report and the stderr (the status lines are not printed with
/// `--json`: the report has them).
fn ask(home: &Path, config: &str, extra: &[&str]) -> (Value, String) {
    let mut args = vec![
        "--config",
        config,
        "ask",
        "--json",
        "--yes",
        "--max-tokens",
        "64",
    ];
    args.extend_from_slice(extra);
    args.push(TOKYO);
    args.extend_from_slice(GREEDY);
    let out = run_rkmcp(home, &args);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let report = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("ask --json printed no JSON ({e}): {}", stdout(&out)));
    (report, stderr(&out))
}

fn turn(report: &Value) -> &Value {
    &report["transcript"]["turns"][0]
}

fn tool_list(report: &Value) -> &Value {
    &turn(report)["tool_list"]
}

/// The turn's rounds as the model wrote them and the calls with their outcomes.
fn rounds(report: &Value) -> Vec<(String, Vec<(String, String)>)> {
    turn(report)["rounds"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let calls = r["calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        c["outcome"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            (r["raw"].as_str().unwrap_or_default().to_string(), calls)
        })
        .collect()
}

fn remembered_files(home: &Path) -> usize {
    std::fs::read_dir(home.join("cache/rkmcp/tool-lists"))
        .map(|d| d.flatten().count())
        .unwrap_or(0)
}

/// The second run starts from the list the first kept and, its servers listing the same tools,
/// goes on from that round: the same rounds, calls and answer as a run from the live list.
#[test]
fn a_second_ask_goes_on_from_the_round_made_with_the_remembered_tools() {
    let home = tempfile::tempdir().unwrap();
    let config = server_script(home.path(), "", "UTC");
    let (first, _) = ask(home.path(), &config, &["--tool-choice", "required"]);
    assert_eq!(tool_list(&first)["from"], "live", "{:#}", turn(&first));
    assert_eq!(remembered_files(home.path()), 1);
    let (second, _) = ask(home.path(), &config, &["--tool-choice", "required"]);
    assert_eq!(
        tool_list(&second)["from"],
        "remembered",
        "{:#}",
        turn(&second)
    );
    assert_eq!(rounds(&second), rounds(&first));
    assert_eq!(second["answer"], first["answer"]);
    let calls = &rounds(&second)[0].1;
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "time__get_current_time");
    assert_eq!(calls[0].1, "ok");
    // `remember_tools = false`: neither read nor written.
    let off = tempfile::tempdir().unwrap();
    let config = server_script(off.path(), "", "UTC");
    let config_off = write(
        off.path(),
        "off.toml",
        &format!(
            "{}\n[chat]\nremember_tools = false\n",
            std::fs::read_to_string(&config).unwrap()
        ),
    )
    .display()
    .to_string();
    let (_, _) = ask(off.path(), &config_off, &["--tool-choice", "required"]);
    let (again, _) = ask(off.path(), &config_off, &["--tool-choice", "required"]);
    assert_eq!(tool_list(&again)["from"], "live");
    assert_eq!(remembered_files(off.path()), 0);
}

/// The server changed behind the same configuration (another local timezone changes its tools'
/// schemas): the early round is discarded, the turn runs from the live list (its call still
/// works), and the next run starts from the new list.
#[test]
fn a_changed_tool_list_discards_the_early_round_and_is_remembered_instead() {
    let home = tempfile::tempdir().unwrap();
    let config = server_script(home.path(), "", "UTC");
    ask(home.path(), &config, &["--tool-choice", "required"]);
    server_script(home.path(), "", "Europe/Paris");
    let (changed, _) = ask(home.path(), &config, &["--tool-choice", "required"]);
    assert_eq!(
        tool_list(&changed)["from"],
        "discarded",
        "{:#}",
        turn(&changed)
    );
    let why = tool_list(&changed)["why"].as_str().unwrap_or_default();
    assert!(why.contains("description or schema"), "{why}");
    let calls = &rounds(&changed)[0].1;
    assert_eq!(calls.first().map(|c| c.1.as_str()), Some("ok"), "{calls:?}");
    // The user's message is in the history once, not once per try.
    let users = changed["transcript"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(users, 1, "{:#}", changed["transcript"]["messages"]);
    let (next, _) = ask(home.path(), &config, &["--tool-choice", "required"]);
    assert_eq!(tool_list(&next)["from"], "remembered");
}

/// A server slow to start: the early round waits for it and stands once its list is in. One
/// that fails to start: the round is discarded, nothing is called, the answer still comes.
#[test]
fn a_slow_server_confirms_the_early_round_and_a_failed_one_discards_it() {
    let home = tempfile::tempdir().unwrap();
    let config = server_script(home.path(), "", "UTC");
    let (first, _) = ask(home.path(), &config, &["--tool-choice", "required"]);
    server_script(home.path(), "sleep 3", "UTC");
    let (slow, _) = ask(home.path(), &config, &["--tool-choice", "required"]);
    assert_eq!(tool_list(&slow)["from"], "remembered", "{:#}", turn(&slow));
    assert_eq!(rounds(&slow), rounds(&first));

    write(
        home.path(),
        "server.sh",
        "echo 'time: broken on purpose' >&2\nexit 3\n",
    );
    let (failed, _) = ask(home.path(), &config, &[]);
    assert_eq!(
        tool_list(&failed)["from"],
        "discarded",
        "{:#}",
        turn(&failed)
    );
    assert!(
        tool_list(&failed)["why"]
            .as_str()
            .unwrap_or_default()
            .contains("did not start"),
        "{:#}",
        tool_list(&failed)
    );
    assert!(
        rounds(&failed).iter().all(|(_, calls)| calls.is_empty()),
        "{:?}",
        rounds(&failed)
    );
    assert_eq!(failed["server_failures"][0]["server"], "time", "{failed:#}");
    // A failed start is not remembered: the next good run still starts from the old list.
    server_script(home.path(), "", "UTC");
    let (back, _) = ask(home.path(), &config, &["--tool-choice", "required"]);
    assert_eq!(tool_list(&back)["from"], "remembered");
}
