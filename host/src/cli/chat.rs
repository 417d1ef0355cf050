//! `rkmcp chat` — a conversation in the terminal. The model's answers stream to stdout; tool
//! calls, approvals, server logs and progress go to stderr. Lines starting with `/` are commands
//! (`/help`). Ctrl-C interrupts the current generation or tool call and returns to the prompt;
//! Ctrl-D or `/exit` leaves.
//!
//! Line editing and history come from `rustyline` (run on a thread of its own, because it
//! blocks); MCP progress notifications are drawn with `indicatif`.
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rkmcp_llm::{Message, Role};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::approve_prompt::{TerminalPrompter, printable};
use super::ask::{ChatArgs, ModelArgs, model_config};
use super::inspect::{content_text, split_pair};
use super::turn_view::{self, dim};
use super::{Context, UsageError};
use crate::chat::approval::Prompter;
use crate::chat::reload::PluginReloader;
use crate::chat::{ChatEngine, ChatOptions, ChatSettings, start_chat};
use crate::mcp::session::SessionEvent;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Type a message and press Enter. End a line with \\ to continue on the next one, or put the text
between two lines of \"\"\" to paste a block. Commands start with /: /help lists them.

The model may call the tools of the configured MCP servers. Each call is checked against the
tool's schema and approved before it runs: by [chat.approval] rules, by approval-guard plugins,
or by you at the prompt (allow once, for this session, or deny). --yes approves every call.
Ctrl-C stops the current answer or tool call (the server is told) and keeps the chat.

Plugins are reloaded while the chat runs: the plugin folders are watched, and before your next
message a changed NAME.wasm of a guard, detector or converter the chat uses is loaded and
checked; it replaces the running version if it loads, otherwise the running version stays and a
notice says why. A removed plugin keeps running until the chat ends (a guard never leaves the
approval path silently); restart the chat to run without it.")]
pub struct ChatCmdArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub chat: ChatArgs,
    /// Approve every tool call (guard plugins and deny rules still apply).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// History file (default: $XDG_STATE_HOME/rkmcp/history).
    #[arg(long, value_name = "FILE", conflicts_with = "no_history")]
    pub history: Option<PathBuf>,
    /// Do not read or write a history file.
    #[arg(long)]
    pub no_history: bool,
}

/// What a slash command asks the loop to do next.
enum Flow {
    Continue,
    /// Run a turn with this input ("" = let the model answer what was just added).
    Turn(String),
    Exit,
}

pub async fn run(ctx: &Context, args: ChatCmdArgs) -> anyhow::Result<ExitCode> {
    let config = ctx.load_config()?;
    let model = model_config(ctx, &args.model)?;
    let settings = args.chat.apply(config.section::<ChatSettings>("chat")?);
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    super::sign_in_prompt::install_if_terminal();
    // Approval questions need a person at a terminal; piped input gets the non-interactive policy.
    let prompter: Option<Arc<dyn Prompter>> = if terminal {
        Some(Arc::new(TerminalPrompter::new()))
    } else {
        None
    };
    eprintln!(
        "{}",
        dim("rkmcp: starting the MCP servers and loading the model…")
    );
    let started = start_chat(
        &config,
        ChatOptions {
            model,
            settings,
            prompter,
            yes: args.yes,
            only_server: args.chat.server.clone(),
            no_tools: args.chat.no_tools,
            forms: terminal.then(|| {
                Arc::new(super::elicit_form::TerminalForms)
                    as Arc<dyn crate::chat::client::FormAsker>
            }),
            sampling_approver: terminal.then(|| {
                Arc::new(super::sampling_prompt::TerminalSamplingApprover)
                    as Arc<dyn crate::chat::sampling::SamplingApprover>
            }),
            accept_defaults: ctx.global.accept_defaults,
            early_question: None,
        },
    )
    .await?;
    let mut engine = started.engine;
    turn_view::print_start(&engine, &started.failures);
    let mut reloader = match PluginReloader::start(started.plugin_host, &config, engine.settings())
    {
        Ok(r) => r,
        Err(err) => {
            eprintln!("rkmcp: plugin hot reload is off: {err:#}");
            None
        }
    };
    if let Some(r) = &reloader
        && terminal
        && !r.watched().is_empty()
    {
        let dirs: Vec<String> = r
            .watched()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        eprintln!(
            "{}",
            dim(&format!(
                "Plugins are reloaded when their files change (watching {}).",
                rkmcp_term_safe::sanitized_inline(dirs.join(", "))
            ))
        );
    }
    if terminal {
        eprintln!(
            "{}",
            dim("Type /help for commands; Ctrl-C interrupts an answer; Ctrl-D or /exit leaves.")
        );
    }

    let notices = Notifications::start(&engine);
    let history = if args.no_history {
        None
    } else {
        Some(args.history.clone().unwrap_or_else(default_history_path))
    };
    let mut reader = LineReader::start(history)?;
    let mut exit = ExitCode::SUCCESS;
    loop {
        let line = match reader.read().await {
            Input::Line(l) => l,
            Input::Interrupted => continue,
            Input::Eof => break,
            Input::Failed(err) => {
                eprintln!("rkmcp: cannot read input: {err}");
                exit = ExitCode::from(1);
                break;
            }
        };
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        // Between turns only: a plugin never changes under a running turn.
        if let Some(r) = reloader.as_mut() {
            for notice in r.apply(&mut engine).await {
                eprintln!("{}", dim(&format!("rkmcp: {notice}")));
            }
        }
        let flow = match trimmed.strip_prefix('/') {
            Some(command) => slash(&mut engine, &config, command).await,
            None => Flow::Turn(line.clone()),
        };
        match flow {
            Flow::Continue => {}
            Flow::Exit => break,
            Flow::Turn(input) => {
                run_turn(&mut engine, &input, ctx.global.json).await;
                notices.clear_bars();
            }
        }
    }
    notices.stop();
    reader.stop();
    engine.into_sessions_shutdown().await;
    Ok(exit)
}

/// One turn with streaming output and Ctrl-C cancellation. A failure is reported and the chat
/// goes on: nothing the user typed is lost (it stays in the history).
async fn run_turn(engine: &mut ChatEngine, input: &str, json: bool) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut out = turn_view::Printer::for_engine(engine);
    let printer = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if json {
                if let Ok(line) = serde_json::to_string(&event) {
                    println!("{line}");
                }
            } else {
                out.show(&event);
            }
        }
        out
    });
    let cancel = CancellationToken::new();
    let on_ctrl_c = cancel.clone();
    let watcher = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_ctrl_c.cancel();
        }
    });
    let result = engine.turn(input, &tx, cancel).await;
    watcher.abort();
    drop(tx);
    if let Ok(p) = printer.await
        && !json
    {
        p.finish();
    }
    if let Err(err) = result {
        eprintln!("rkmcp: error: {err:#}");
    }
}

/// `/subscribe URI`, `/unsubscribe URI`: updates are shown by [`Notifications`].
async fn subscription(engine: &ChatEngine, on: bool, rest: &[&str]) -> anyhow::Result<Flow> {
    let [uri] = rest else {
        return Err(UsageError(format!(
            "usage: /{}subscribe URI",
            if on { "" } else { "un" }
        ))
        .into());
    };
    let session = super::inspect::pick_resource_server(engine.sessions(), uri)?;
    if on {
        session.subscribe_resource(uri).await?;
        println!(
            "{}",
            dim(&format!("(subscribed to {uri} on `{}`)", session.name()))
        );
    } else {
        session.unsubscribe_resource(uri).await?;
        println!("{}", dim(&format!("(unsubscribed from {uri})")));
    }
    Ok(Flow::Continue)
}

fn default_history_path() -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    state.join("rkmcp").join("history")
}

// ---------------------------------------------------------------------------------------------
// Slash commands

const HELP: &str = "\
/help                    this list
/tools                   the tools the model can call
/servers                 the MCP servers and what they offer
/resources               resources and resource templates
/resource URI            put a resource into the conversation
/subscribe URI           show a notice whenever the resource changes
/unsubscribe URI         stop those notices
/prompt NAME [k=v …]     put a server's prompt template into the conversation and answer it
/skills                  the skills servers offer (reads no skill file)
/skill NAME [FILE]       load a skill (or one of its files) into the conversation, verified
/plugins                 the WebAssembly plugins found and their status
/roots [add|remove PATH] the directories servers may work in (roots)
/context                 how much of the model's context window the conversation takes
/clear                   forget the conversation (the transcript keeps it for /save)
/save FILE               write the transcript (messages, calls, approvals, results) as JSON
/exit                    leave (Ctrl-D too)";

const COMMANDS: &[&str] = &[
    "help",
    "tools",
    "servers",
    "resources",
    "resource",
    "subscribe",
    "unsubscribe",
    "prompt",
    "skills",
    "skill",
    "plugins",
    "roots",
    "context",
    "clear",
    "save",
    "exit",
    "quit",
];

async fn slash(engine: &mut ChatEngine, config: &crate::config::Config, command: &str) -> Flow {
    let mut words = command.split_whitespace();
    let name = words.next().unwrap_or("");
    let rest: Vec<&str> = words.collect();
    let result = match name {
        "help" | "?" => {
            println!("{HELP}");
            Ok(Flow::Continue)
        }
        "exit" | "quit" | "q" => Ok(Flow::Exit),
        "tools" => {
            show_tools(engine);
            Ok(Flow::Continue)
        }
        "servers" => {
            show_servers(engine);
            Ok(Flow::Continue)
        }
        "resources" => {
            show_resources(engine);
            Ok(Flow::Continue)
        }
        "resource" => add_resource(engine, &rest).await,
        "subscribe" | "unsubscribe" => subscription(engine, name == "subscribe", &rest).await,
        "prompt" => add_prompt(engine, &rest).await,
        "skills" => super::skills::chat_list(engine)
            .await
            .map(|()| Flow::Continue),
        "skill" => super::skills::chat_load(engine, &rest)
            .await
            .map(|()| Flow::Continue),
        "plugins" => show_plugins(config),
        "roots" => super::roots_command::run(engine.sessions(), &rest)
            .await
            .map(|()| Flow::Continue),
        "context" => engine.context_usage().await.map(|usage| {
            println!("{}", usage.render());
            Flow::Continue
        }),
        "clear" => {
            engine.clear();
            println!("{}", dim("(conversation cleared)"));
            Ok(Flow::Continue)
        }
        "save" => save(engine, &rest),
        other => {
            let hint = crate::config::nearest(other, COMMANDS)
                .map(|n| format!(" — did you mean /{n}?"))
                .unwrap_or_default();
            Err(UsageError(format!(
                "unknown command /{other}{hint} (/help lists the commands)"
            ))
            .into())
        }
    };
    match result {
        Ok(flow) => flow,
        Err(err) => {
            eprintln!("rkmcp: {err:#}");
            Flow::Continue
        }
    }
}

fn show_tools(engine: &ChatEngine) {
    let (tools, _) = engine.sessions().tools();
    if tools.is_empty() {
        println!("no tools (no server is running, or none offers tools)");
        return;
    }
    for t in &tools {
        let description = t
            .tool
            .description
            .as_deref()
            .and_then(|d| d.lines().next())
            .unwrap_or("");
        println!(
            "{:<36} {}",
            t.name,
            super::output::short(Some(description), 80)
        );
    }
    println!(
        "{}",
        dim(&format!(
            "{} tool{} · the model calls them as {}",
            tools.len(),
            if tools.len() == 1 { "" } else { "s" },
            engine.plan().format
        ))
    );
}

fn show_servers(engine: &ChatEngine) {
    for s in engine.sessions().sessions() {
        let catalog = s.catalog();
        let (name, version) = s
            .server_info()
            .and_then(|i| {
                i.server_info
                    .as_ref()
                    .map(|s| (s.name.to_string(), s.version.to_string()))
            })
            .unwrap_or_default();
        let health = s.health();
        let latency = health
            .last_latency
            .map(|l| format!(" ({:.0} ms)", l.as_secs_f64() * 1000.0))
            .unwrap_or_default();
        let restarts = match health.restarts {
            0 => String::new(),
            n => format!(" · {n} restart{}", if n == 1 { "" } else { "s" }),
        };
        println!(
            "{:<16} {}{latency}{restarts} · {} {} · {} tools · {} resources · {} templates · {} prompts",
            s.name(),
            health.health.as_str(),
            name,
            version,
            catalog.tools.len(),
            catalog.resources.len(),
            catalog.resource_templates.len(),
            catalog.prompts.len()
        );
    }
    for f in engine.sessions().failures() {
        println!("{:<16} DOWN {}", f.server, f.error);
    }
}

fn show_resources(engine: &ChatEngine) {
    let mut any = false;
    for s in engine.sessions().sessions() {
        let catalog = s.catalog();
        for r in catalog.resources.iter() {
            any = true;
            println!("{:<40} {:<12} {}", r.uri, s.name(), r.name);
        }
        for t in catalog.resource_templates.iter() {
            any = true;
            println!(
                "{:<40} {:<12} {} (template)",
                t.uri_template,
                s.name(),
                t.name
            );
        }
    }
    if !any {
        println!("no resources");
    }
}

/// Reads a resource and adds it to the conversation as a user message, so the next question can
/// refer to it. The server that lists the URI is asked first, then the others.
async fn add_resource(engine: &mut ChatEngine, args: &[&str]) -> anyhow::Result<Flow> {
    let [uri] = args else {
        return Err(UsageError("usage: /resource URI (see /resources)".into()).into());
    };
    let sessions = engine.sessions().clone();
    let mut candidates: Vec<_> = sessions.sessions().iter().collect();
    candidates.sort_by_key(|s| !s.catalog().resources.iter().any(|r| r.uri == *uri));
    let mut errors = Vec::new();
    for session in candidates {
        match session.read_resource(uri).await {
            Ok(result) => {
                let text = content_text(&serde_json::to_value(&result.contents)?);
                println!(
                    "{}",
                    dim(&format!(
                        "(added {uri} from {} to the conversation: {} characters)",
                        session.name(),
                        text.chars().count()
                    ))
                );
                engine.push_context(Message::user(format!("Resource {uri}:\n{text}")));
                return Ok(Flow::Continue);
            }
            Err(err) => errors.push(err.to_string()),
        }
    }
    if errors.is_empty() {
        anyhow::bail!("no server is running to read {uri}");
    }
    anyhow::bail!("cannot read {uri}: {}", errors.join("; "))
}

/// Renders a server's prompt template, adds its messages to the conversation and, when the last
/// one is the user's, lets the model answer it.
async fn add_prompt(engine: &mut ChatEngine, args: &[&str]) -> anyhow::Result<Flow> {
    let Some((name, pairs)) = args.split_first() else {
        return Err(UsageError("usage: /prompt NAME [key=value …]".into()).into());
    };
    let (server, prompt) = match name.split_once('/') {
        Some((s, p)) => (Some(s), p),
        None => (None, *name),
    };
    let sessions = engine.sessions().clone();
    let owners: Vec<_> = sessions
        .sessions()
        .iter()
        .filter(|s| server.is_none_or(|name| s.name() == name))
        .filter(|s| s.catalog().prompts.iter().any(|p| p.name == prompt))
        .collect();
    let session = match owners.as_slice() {
        [one] => *one,
        [] => {
            let names: Vec<String> = sessions
                .sessions()
                .iter()
                .flat_map(|s| {
                    s.catalog()
                        .prompts
                        .iter()
                        .map(|p| p.name.clone())
                        .collect::<Vec<_>>()
                })
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let hint = crate::config::nearest(prompt, &names)
                .map(|n| format!(" — did you mean {n}?"))
                .unwrap_or_default();
            anyhow::bail!(UsageError(format!(
                "no server offers a prompt named `{prompt}`{hint}"
            )));
        }
        many => anyhow::bail!(UsageError(format!(
            "prompt `{prompt}` is offered by {}; write /prompt SERVER/{prompt}",
            many.iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(" and ")
        ))),
    };
    let mut arguments = Map::new();
    for pair in pairs {
        let (k, v) = split_pair(pair)?;
        arguments.insert(k.to_string(), Value::String(v.to_string()));
    }
    let result = session
        .get_prompt(prompt, (!arguments.is_empty()).then_some(arguments))
        .await?;
    let mut last_role = None;
    for m in &result.messages {
        let v = serde_json::to_value(m)?;
        let role = match v["role"].as_str() {
            Some("assistant") => Role::Assistant,
            _ => Role::User,
        };
        let text = content_text(&Value::Array(vec![v["content"].clone()]));
        println!("{}", dim(&format!("[{}] {text}", role.as_str())));
        engine.push_context(Message::new(role, text));
        last_role = Some(role);
    }
    Ok(match last_role {
        Some(Role::User) => Flow::Turn(String::new()),
        _ => Flow::Continue,
    })
}

fn show_plugins(config: &crate::config::Config) -> anyhow::Result<Flow> {
    let plugins: rkmcp_plugin_host::PluginsConfig = config.section("plugins")?;
    let host = rkmcp_plugin_host::PluginHost::new(plugins)?;
    let infos = host.discover();
    if infos.is_empty() {
        println!(
            "no plugins (*.wasm) in {}",
            super::plugins::searched_dirs(&host)
        );
    }
    for i in &infos {
        println!(
            "{:<28} {:<17} {:?}",
            i.name,
            i.kind.map_or("-".to_string(), |k| k.to_string()),
            i.status
        );
    }
    Ok(Flow::Continue)
}

/// Writes the transcript next to the target and renames it over, so a failed write never
/// leaves half a file where an older transcript was.
fn save(engine: &ChatEngine, args: &[&str]) -> anyhow::Result<Flow> {
    let [file] = args else {
        return Err(UsageError("usage: /save FILE".into()).into());
    };
    let path = Path::new(file);
    let json = serde_json::to_string_pretty(engine.transcript())?;
    let tmp = path.with_extension("rkmcp-save.tmp");
    std::fs::write(&tmp, json + "\n")
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    println!(
        "{}",
        dim(&format!("(transcript written to {})", path.display()))
    );
    Ok(Flow::Continue)
}

// ---------------------------------------------------------------------------------------------
// Server notifications: log messages dimmed, progress as bars.

struct Notifications {
    multi: MultiProgress,
    bars: Arc<Mutex<HashMap<String, ProgressBar>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Notifications {
    fn start(engine: &ChatEngine) -> Notifications {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let bars: Arc<Mutex<HashMap<String, ProgressBar>>> = Arc::default();
        let tasks = engine
            .sessions()
            .sessions()
            .iter()
            .map(|session| {
                let mut events = session.subscribe();
                let multi = multi.clone();
                let bars = Arc::clone(&bars);
                tokio::spawn(async move {
                    loop {
                        match events.recv().await {
                            Ok(event) => show_notification(&multi, &bars, event),
                            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                                tracing::debug!("{n} server notifications skipped (too many)");
                            }
                            Err(_) => break,
                        }
                    }
                })
            })
            .collect();
        Notifications { multi, bars, tasks }
    }

    /// Removes the bars of a finished turn.
    fn clear_bars(&self) {
        if let Ok(mut bars) = self.bars.lock() {
            for (_, bar) in bars.drain() {
                bar.finish_and_clear();
            }
        }
        let _ = self.multi.clear();
    }

    fn stop(self) {
        self.clear_bars();
        for t in self.tasks {
            t.abort();
        }
    }
}

fn show_notification(
    multi: &MultiProgress,
    bars: &Mutex<HashMap<String, ProgressBar>>,
    event: SessionEvent,
) {
    match event {
        SessionEvent::Log {
            server,
            level,
            logger,
            data,
        } => {
            let text = match &data {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let level = serde_json::to_value(level)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let from = match logger {
                Some(l) => format!("{server}/{l}"),
                None => server,
            };
            let line = dim(&format!("[{from} {level}] {text}"));
            multi.suspend(|| eprintln!("{line}"));
        }
        SessionEvent::Progress { server, params } => {
            let key = format!("{server}:{:?}", params.progress_token);
            let Ok(mut bars) = bars.lock() else { return };
            let bar = bars.entry(key).or_insert_with(|| {
                let bar = multi.add(match params.total {
                    Some(total) => ProgressBar::new(total.max(0.0) as u64),
                    None => ProgressBar::new_spinner(),
                });
                let style = ProgressStyle::with_template(
                    "  {prefix:.dim} [{bar:30}] {pos}/{len} {wide_msg:.dim}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
                bar.set_style(style);
                bar.set_prefix(server.clone());
                bar
            });
            if let Some(total) = params.total {
                bar.set_length(total.max(0.0) as u64);
            }
            bar.set_position(params.progress.max(0.0) as u64);
            if let Some(message) = params.message {
                bar.set_message(message);
            }
        }
        SessionEvent::ListRefreshed { server, list } => {
            let line = dim(&format!(
                "[{server}: {list:?} list changed and was re-read]"
            ));
            multi.suspend(|| eprintln!("{line}"));
        }
        // Task status is shown by the call that runs the task; other notifications are logged.
        SessionEvent::TaskStatus { .. } | SessionEvent::Notification { .. } => {}
        SessionEvent::Task { server, tool, task } => {
            let line = dim(&printable(&super::tasks::status_line(
                &server, &tool, &task,
            )));
            multi.suspend(|| eprintln!("{line}"));
        }
        SessionEvent::ResourceUpdated { server, uri } => {
            let line = dim(&printable(&format!("[{server}: {uri} was updated]")));
            multi.suspend(|| eprintln!("{line}"));
        }
        SessionEvent::Health { server, transition } => {
            let line = format!("[{server} {transition}]");
            let line = dim(&printable(&line));
            multi.suspend(|| eprintln!("{line}"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Input: rustyline on a thread of its own.

enum Input {
    Line(String),
    /// Ctrl-C at the prompt: a fresh prompt, as in a shell.
    Interrupted,
    Eof,
    Failed(String),
}

struct LineReader {
    requests: std::sync::mpsc::Sender<tokio::sync::oneshot::Sender<Input>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LineReader {
    fn start(history: Option<PathBuf>) -> anyhow::Result<LineReader> {
        let mut editor = rustyline::DefaultEditor::new()
            .map_err(|e| anyhow::anyhow!("cannot set up line editing: {e}"))?;
        if let Some(path) = &history {
            // A missing file is the normal first run.
            let _ = editor.load_history(path);
        }
        let (tx, rx) = std::sync::mpsc::channel::<tokio::sync::oneshot::Sender<Input>>();
        let thread = std::thread::Builder::new()
            .name("rkmcp-input".into())
            .spawn(move || {
                while let Ok(reply) = rx.recv() {
                    let input = read_entry(&mut editor);
                    if let (Input::Line(line), Some(path)) = (&input, &history) {
                        let _ = editor.add_history_entry(line.as_str());
                        if let Some(dir) = path.parent() {
                            let _ = std::fs::create_dir_all(dir);
                        }
                        if let Err(err) = editor.save_history(path) {
                            tracing::debug!("cannot save history to {}: {err}", path.display());
                        }
                    }
                    if reply.send(input).is_err() {
                        break;
                    }
                }
            })?;
        Ok(LineReader {
            requests: tx,
            thread: Some(thread),
        })
    }

    async fn read(&mut self) -> Input {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if self.requests.send(tx).is_err() {
            return Input::Eof;
        }
        rx.await.unwrap_or(Input::Eof)
    }

    fn stop(mut self) {
        // Dropping the sender ends the thread's loop once it is back from readline.
        let (dead, _) = std::sync::mpsc::channel();
        self.requests = dead;
        if let Some(t) = self.thread.take()
            && t.is_finished()
        {
            let _ = t.join();
        }
    }
}

/// One entry: a line, lines joined by a trailing `\`, or a block between `"""` lines.
fn read_entry(editor: &mut rustyline::DefaultEditor) -> Input {
    use rustyline::error::ReadlineError;
    let mut lines: Vec<String> = Vec::new();
    let mut block = false;
    loop {
        let prompt = if lines.is_empty() && !block {
            "» "
        } else {
            "… "
        };
        match editor.readline(prompt) {
            Ok(line) => {
                if !block && lines.is_empty() && line.trim() == "\"\"\"" {
                    block = true;
                    continue;
                }
                if block {
                    if line.trim() == "\"\"\"" {
                        return Input::Line(lines.join("\n"));
                    }
                    lines.push(line);
                    continue;
                }
                match line.strip_suffix('\\') {
                    Some(start) => lines.push(start.to_string()),
                    None => {
                        lines.push(line);
                        return Input::Line(lines.join("\n"));
                    }
                }
            }
            Err(ReadlineError::Interrupted) => return Input::Interrupted,
            // Ctrl-D inside a multi-line entry sends what was typed rather than dropping it.
            Err(ReadlineError::Eof) if !lines.is_empty() => return Input::Line(lines.join("\n")),
            Err(ReadlineError::Eof) => return Input::Eof,
            Err(err) => return Input::Failed(err.to_string()),
        }
    }
}
