//! `sampling/createMessage` served by the real local model (SmolLM2-135M, llama.cpp on the CPU)
//! for a real PyPI `mcp` server (tests/servers/client_requests.py): a plain request with every
//! limit, an image refused, a request with tools answered through the chat's grammar and
//! detector, the approval steps, the non-interactive denial, and one generation at a time.
#![allow(deprecated)] // sampling is deprecated by SEP-2577, but servers use it.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rkmcp::chat::ChatSettings;
use rkmcp::chat::sampling::{
    Answer, Prepared, RequestChoice, Sampler, SamplingApprover, SamplingPolicy, SamplingSettings,
};
use rkmcp::mcp::SessionManager;
use rkmcp_llm::{FinishReason, GenerateRequest, LlmError, Message, ModelConfig, SharedBackend};
use rkmcp_tests::*;
use serde_json::{Value, json};

fn config(dir: &std::path::Path, sampling: &str) -> rkmcp::config::Config {
    let python = deps().join("venv-plugins/bin/python");
    let script = repo().join("tests/servers/client_requests.py");
    let toml = format!(
        "{}\n[sampling]\n{sampling}\n",
        stdio_entry(
            "client",
            &python.display().to_string(),
            &[script.display().to_string()],
            // 2025-11-25: this server asks for sampling in the middle of a tool call, which a
            // 2026-07-28 (stateless) session has no back-channel for.
            "request_timeout = \"120s\"\nprotocol = \"2025-11-25\"",
        )
    );
    load_config(dir, &toml)
}

async fn model() -> SharedBackend {
    let mut m = ModelConfig {
        threads: Some(1),
        context_length: Some(2048),
        ..ModelConfig::default()
    };
    m.sampling.temperature = 0.0;
    SharedBackend::open(m)
        .await
        .expect("the default model is installed by scripts/setup")
}

/// Starts the server with a sampler on the real model; `approver` plays the person.
async fn start(
    config: &rkmcp::config::Config,
    backend: SharedBackend,
    approver: Option<Arc<dyn SamplingApprover>>,
) -> SessionManager {
    let client = rkmcp::chat::start::local_client(config, None, false);
    let manager = SessionManager::start_with(config, None, client.clone()).await;
    assert!(manager.failures().is_empty(), "{:?}", manager.failures());
    let settings: SamplingSettings = config.section("sampling").unwrap();
    // What `includeContext` adds, as the chat's sampler gets it (`chat::start`): the server's
    // instructions, tools and resources.
    let contexts: std::collections::HashMap<String, String> = manager
        .sessions()
        .iter()
        .map(|s| (s.name().to_string(), rkmcp::chat::start::server_context(s)))
        .collect();
    let sampler = Sampler::new(
        backend,
        ChatSettings::default(),
        SamplingPolicy::new(settings).unwrap(),
        approver,
    )
    .with_context(Arc::new(move |server: &str| contexts.get(server).cloned()));
    client.set_sampler(Arc::new(sampler));
    manager
}

/// The text the tool returned.
async fn call(manager: &SessionManager, tool: &str, args: Value) -> String {
    let r = manager
        .call_tool(tool, args.as_object().cloned())
        .await
        .unwrap();
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// What came back from a tool whose sampling request was refused: the server raises the
/// client's error, and its SDK returns it as a tool error result or as a JSON-RPC error (either
/// way the refusal's words must reach the caller).
async fn refused_call(manager: &SessionManager, tool: &str, args: Value) -> String {
    match manager.call_tool(tool, args.as_object().cloned()).await {
        Ok(r) => r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect(),
        Err(err) => format!("{err:#}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_auto_approved_request_runs_on_the_local_model_within_its_limits() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "auto_approve = [\"cli*\"]\nmax_tokens = 16");
    let manager = start(&config, model().await, None).await;
    let text = call(
        &manager,
        "client__summarize",
        json!({"text_to_summarize": "The cat sat on the mat all day long."}),
    )
    .await;
    let result: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(result["role"], "assistant", "{result}");
    assert_eq!(result["content"]["type"], "text");
    assert!(
        !result["content"]["text"]
            .as_str()
            .unwrap()
            .trim()
            .is_empty()
    );
    assert!(
        result["model"].as_str().unwrap().contains("SmolLM2"),
        "{result}"
    );
    // The server asked for 24 tokens, the config caps at 16.
    assert!(
        ["endTurn", "maxTokens", "stopSequence"].contains(&result["stopReason"].as_str().unwrap()),
        "{result}"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_image_is_refused_naming_what_the_model_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "auto_approve = [\"client\"]");
    let manager = start(&config, model().await, None).await;
    let text = call(&manager, "client__describe_picture", json!({})).await;
    assert!(text.starts_with("refused:"), "{text}");
    assert!(
        text.contains("message 1 contains an image; the local model reads text only"),
        "{text}"
    );
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_in_a_sampling_request_go_through_the_grammar_and_detector() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "auto_approve = [\"client\"]");
    let manager = start(&config, model().await, None).await;
    let text = call(
        &manager,
        "client__sample_with_tools",
        json!({"question": "What is the weather in Paris?"}),
    )
    .await;
    let result: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(result["stopReason"], "toolUse", "{result}");
    let call = &result["content"][0];
    assert_eq!(call["type"], "tool_use", "{result}");
    assert_eq!(call["name"], "get_weather");
    assert!(call["input"]["city"].is_string(), "{result}");
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_nobody_to_ask_a_request_is_denied_saying_how_to_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "");
    let manager = start(&config, model().await, None).await;
    let text = refused_call(
        &manager,
        "client__summarize",
        json!({"text_to_summarize": "x"}),
    )
    .await;
    assert!(
        text.contains("auto_approve = [\\\"client\\\"]")
            || text.contains("auto_approve = [\"client\"]"),
        "{text}"
    );
    assert!(text.contains("nobody is here to approve it"), "{text}");
    manager.shutdown().await;
}

/// A person at the terminal, scripted: what they were shown and what they answer.
struct Person {
    choice: RequestChoice,
    send: bool,
    seen: Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl SamplingApprover for Person {
    async fn review_request(&self, request: &Prepared) -> RequestChoice {
        self.seen.lock().unwrap().push(format!(
            "request from {} max {} system {:?} first {:?}",
            request.server,
            request.max_tokens,
            request.system_prompt,
            request.messages.first().map(|m| m.content.clone())
        ));
        self.choice
    }
    async fn review_answer(&self, server: &str, answer: &Answer) -> bool {
        self.seen
            .lock()
            .unwrap()
            .push(format!("answer for {server}: {answer:?}"));
        self.send
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn in_chat_the_request_and_then_the_answer_are_approved() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), "max_tokens = 8");
    let backend = model().await;
    // Allowed for the session, but the generated answer is not sent.
    let person = Arc::new(Person {
        choice: RequestChoice::ForSession,
        send: false,
        seen: Mutex::default(),
    });
    let manager = start(&config, backend.clone(), Some(person.clone())).await;
    let text = refused_call(
        &manager,
        "client__summarize",
        json!({"text_to_summarize": "a b c"}),
    )
    .await;
    assert!(
        text.contains("the user declined the generated answer"),
        "{text}"
    );
    let seen = person.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen[0].starts_with("request from client max 8"), "{seen:?}");
    // includeContext "thisServer": the server's tools are added to its system prompt.
    assert!(
        seen[0].contains("You write very short summaries."),
        "{seen:?}"
    );
    assert!(seen[0].contains("tool summarize"), "{seen:?}");
    assert!(seen[1].starts_with("answer for client"), "{seen:?}");
    manager.shutdown().await;

    // Denied outright: the model never runs.
    let person = Arc::new(Person {
        choice: RequestChoice::Deny,
        send: true,
        seen: Mutex::default(),
    });
    let manager = start(&config, backend, Some(person.clone())).await;
    let text = refused_call(
        &manager,
        "client__summarize",
        json!({"text_to_summarize": "a"}),
    )
    .await;
    assert!(text.contains("the user declined it"), "{text}");
    assert_eq!(person.seen.lock().unwrap().len(), 1);
    manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_generation_at_a_time_the_second_waits_or_gives_up() {
    let backend = model().await;
    let mut long = GenerateRequest::new(vec![Message::user("Count from one to one hundred.")]);
    long.max_new_tokens = Some(400);
    long.stop.clear();
    let first = backend.generate(long);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let short = GenerateRequest::new(vec![Message::user("Hi")]);
    let busy = backend
        .generate_within(short.clone(), Duration::from_millis(50))
        .finish()
        .await;
    assert!(
        matches!(busy, Err(LlmError::Busy { .. })),
        "expected Busy, got {:?}",
        busy.map(|g| g.text)
    );
    // Waiting long enough, it runs after the first.
    let waited = backend.generate_within(short, Duration::from_secs(120));
    assert!(first.finish().await.is_ok());
    assert!(waited.finish().await.is_ok());
}

/// The user's own turn never waits behind a server's sampling: a generation giving way (what
/// the sampler starts) is stopped when the user's generation needs the model.
#[tokio::test(flavor = "multi_thread")]
async fn the_users_turn_stops_a_sampling_generation_instead_of_waiting_for_it() {
    let backend = model().await;
    // A generation that is certainly long (greedy, already counting: the model goes on to 100;
    // asked only to count, it once answered "One hundred." before the user's turn came), and
    // the user's turn comes once it runs, not after a guessed sleep.
    let mut long = GenerateRequest::new(vec![Message::user("Count from one to one hundred.")]);
    long.max_new_tokens = Some(400);
    long.stop.clear();
    long.temperature = Some(0.0);
    long.assistant_prefix = Some("1, 2, 3, 4, 5,".into());
    let mut sampling = backend.generate_giving_way(long, Duration::from_secs(60));
    let first = tokio::time::timeout(Duration::from_secs(120), sampling.chunks.recv()).await;
    assert!(
        matches!(first, Ok(Some(_))),
        "the sampling generation never started"
    );
    let users = backend
        .generate_within(
            GenerateRequest::new(vec![Message::user("Hi")]),
            Duration::from_secs(120),
        )
        .finish()
        .await
        .expect("the user's generation runs");
    assert!(!users.text.is_empty());
    let stopped = sampling.finish().await.expect("stopped, not failed");
    assert_eq!(stopped.finish, FinishReason::Aborted, "{}", stopped.text);
    assert!(stopped.stats.generated_tokens < 400, "{:?}", stopped.stats);
}

/// A server is held to its budget of requests per minute, even when it is auto-approved; the
/// refusal names the setting.
#[tokio::test(flavor = "multi_thread")]
async fn requests_beyond_a_servers_budget_per_minute_are_refused_naming_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "auto_approve = [\"client\"]\nmax_tokens = 8\nrequests_per_minute = 1",
    );
    let manager = start(&config, model().await, None).await;
    let args = json!({"text_to_summarize": "The cat sat on the mat."});
    let first = call(&manager, "client__summarize", args.clone()).await;
    assert!(first.contains("\"assistant\""), "{first}");
    let second = refused_call(&manager, "client__summarize", args).await;
    assert!(second.contains("requests_per_minute = 1"), "{second}");
    assert!(second.contains("server `client`"), "{second}");
    manager.shutdown().await;
}

/// `rkmcp chat` on a pseudo-terminal.
fn chat_on_terminal(home: &std::path::Path, args: &[&str]) -> rexpect::session::PtySession {
    rkmcp_tests::on_terminal(rkmcp_command(home, args), Duration::from_secs(180))
}

#[test]
fn in_chat_at_a_terminal_sampling_is_approved_then_its_answer_is_sent() {
    const ENTER: &str = "\r";
    let home = tempfile::tempdir().unwrap();
    let python = deps().join("venv-plugins/bin/python");
    let script = repo().join("tests/servers/client_requests.py");
    // Only `summarize` (its sampling request comes mid-call: 2025-11-25), auto-approved as a tool
    // call so the only questions are the sampling ones.
    let toml = format!(
        "{}\n[sampling]\nmax_tokens = 8\n[chat.approval]\nauto_approve = [\"client/*\"]\n",
        stdio_entry(
            "client",
            &python.display().to_string(),
            &[script.display().to_string()],
            "request_timeout = \"180s\"\nprotocol = \"2025-11-25\"\nallow = [\"summarize\"]",
        )
    );
    let config = write(home.path(), "rkmcp.toml", &toml)
        .display()
        .to_string();
    let mut p = chat_on_terminal(
        home.path(),
        &[
            "--config",
            &config,
            "chat",
            "--no-history",
            "--tool-choice",
            "required",
            "--max-rounds",
            "2",
            "--max-tokens",
            "160",
            "--temperature",
            "0",
            "--threads",
            "1",
            "--ctx",
            "2048",
        ],
    );
    p.exp_string("/help").expect("no chat prompt");
    p.send_line("Summarize: cats sleep.").unwrap();
    // The request is shown with its server and limits, then approved once.
    p.exp_string("server `client` asks the local model to write (sampling)")
        .expect("the sampling request was not shown");
    p.exp_string("at most 8 tokens").expect("no limits shown");
    p.exp_string("Let the local model answer it?").unwrap();
    p.send(ENTER).unwrap();
    p.flush().unwrap();
    // The model's answer is shown before it goes back; "send" is first.
    p.exp_string("the model's answer for `client`")
        .expect("the generated answer was not shown for approval");
    p.exp_string("Send it to the server?").unwrap();
    p.send(ENTER).unwrap();
    p.flush().unwrap();
    // The tool's result (the sampling result as JSON) came back: the chat goes on.
    p.exp_string("'client__summarize' done in")
        .expect("the tool did not finish with the sampling result");
    std::thread::sleep(std::time::Duration::from_millis(500));
    p.send_line("/exit").unwrap();
    p.exp_eof().expect("chat did not exit");
}

/// `rkmcp tools call` (no model of its own) against server-everything: the sampling request is
/// refused with advice, before any model is loaded (the config's model does not exist, and the
/// refusal says nothing about it); following the advice (`[sampling] auto_approve`), the
/// config's model is loaded when the request comes and answers it, within its `maxTokens`.
#[test]
fn tools_call_answers_sampling_once_the_refusals_advice_is_followed() {
    let home = tempfile::tempdir().unwrap();
    let (node, args) = everything_cmd();
    let entry = stdio_entry("ev", &node, &args, "");
    // `tools call` with server `ev` and `rest` of the config in `file`.
    let call = |file: &str, rest: &str| {
        let config = write(home.path(), file, &format!("{entry}\n{rest}"));
        run_rkmcp(
            home.path(),
            &[
                "--config",
                &config.display().to_string(),
                "tools",
                "call",
                "ev/trigger-sampling-request",
                "prompt=hello",
                "maxTokens=5",
            ],
        )
    };
    let missing_model = "[model]\npath = \"/nonexistent/model.gguf\"\n";
    let refused = call("refused.toml", missing_model);
    let said = format!("{}{}", stdout(&refused), stderr(&refused));
    assert!(!refused.status.success(), "{said}");
    assert!(said.contains("auto_approve = [\"ev\"]"), "{said}");
    assert!(!said.contains("nonexistent"), "a model was loaded: {said}");

    // Advice followed, with a model that exists: answered by the local model.
    let model =
        "[model]\nthreads = 1\ncontext_length = 2048\n[model.sampling]\ntemperature = 0.0\n";
    let advice = "[sampling]\nauto_approve = [\"ev\"]\n";
    let allowed = call("allowed.toml", &format!("{model}\n{advice}"));
    let out = stdout(&allowed);
    assert!(allowed.status.success(), "{out}{}", stderr(&allowed));
    assert!(out.contains("LLM sampling result"), "{out}");
    assert!(
        out.contains("SmolLM2"),
        "the answer names the local model: {out}"
    );

    // The same advice with the missing model: the load failure is named, with its cause.
    let broken = call("broken.toml", &format!("{missing_model}\n{advice}"));
    let said = format!("{}{}", stdout(&broken), stderr(&broken));
    assert!(!broken.status.success(), "{said}");
    assert!(
        said.contains("could not be loaded") && said.contains("nonexistent"),
        "{said}"
    );
}
