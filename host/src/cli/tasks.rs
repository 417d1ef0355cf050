//! `rkmcp tasks list|get|cancel`: the tasks servers run for tool calls (see `mcp/tasks.rs`).
//! `list` needs a 2025-11-25 server (the 2026-07-28 tasks extension has no `tasks/list`); `get`
//! and `cancel` work with both.
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use serde_json::{Value, json};

use super::output;
use super::{Context, UsageError};
use crate::mcp::tasks::{self, TaskApi, TaskInfo};
use crate::mcp::{Session, SessionManager};

#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    /// List the tasks of every server that can list them (2025-11-25 servers).
    List {
        #[arg(long, short = 's')]
        server: Option<String>,
    },
    /// Show a task: status, message and, once it ended, its result or error.
    Get {
        id: String,
        /// The server that runs the task (default: every server with tasks is asked).
        #[arg(long, short = 's')]
        server: Option<String>,
    },
    /// Ask the server to cancel a task.
    Cancel {
        id: String,
        #[arg(long, short = 's')]
        server: Option<String>,
    },
}

/// One line about a task for the terminal: `[server: task ID (tool) working — step 2 of 5]`.
pub fn status_line(server: &str, tool: &str, task: &TaskInfo) -> String {
    let message = task
        .status_message
        .as_deref()
        .map(|m| format!(" — {m}"))
        .unwrap_or_default();
    format!(
        "[{server}: task {} ({tool}) {}{message}]",
        task.task_id, task.status
    )
}

pub async fn run(ctx: &Context, cmd: TasksCommand) -> anyhow::Result<ExitCode> {
    let config = super::inspect::load(ctx)?;
    let only = match &cmd {
        TasksCommand::List { server }
        | TasksCommand::Get { server, .. }
        | TasksCommand::Cancel { server, .. } => server.clone(),
    };
    let manager = super::inspect::start(ctx, &config, only.as_deref()).await?;
    let result = dispatch(ctx, &manager, cmd).await;
    manager.shutdown().await;
    result
}

/// The running sessions that have tasks, with their protocol; the others are named on stderr.
async fn with_tasks(ctx: &Context, manager: &SessionManager) -> Vec<(Arc<Session>, TaskApi)> {
    let mut out = Vec::new();
    for session in manager.sessions() {
        match tasks::session_api(session).await {
            Ok(api) => out.push((session.clone(), api)),
            Err(e) if !ctx.global.json => output::warn(e.to_string()),
            Err(_) => {}
        }
    }
    out
}

async fn dispatch(
    ctx: &Context,
    manager: &SessionManager,
    cmd: TasksCommand,
) -> anyhow::Result<ExitCode> {
    let sessions = with_tasks(ctx, manager).await;
    if sessions.is_empty() {
        return Err(anyhow::anyhow!(
            "no running server offers tasks (see `rkmcp servers status`)"
        ));
    }
    match cmd {
        TasksCommand::List { .. } => {
            let mut rows = Vec::new();
            let mut failures = Vec::new();
            for (session, api) in &sessions {
                match tasks::list(session, *api).await {
                    Ok(list) => rows.extend(list.into_iter().map(|t| (session.name(), t))),
                    Err(e) => {
                        failures.push(json!({"server": session.name(), "error": e.to_string()}))
                    }
                }
            }
            if ctx.global.json {
                let tasks: Vec<Value> = rows
                    .iter()
                    .map(|(server, task)| with_server(server, task))
                    .collect();
                output::json(&json!({"tasks": tasks, "failures": failures}))?;
            } else {
                for f in &failures {
                    output::warn(f["error"].as_str().unwrap_or_default());
                }
                let mut t = output::table(&["task", "server", "status", "message", "updated"]);
                for (server, task) in &rows {
                    t.add_row(vec![
                        task.task_id.clone(),
                        server.to_string(),
                        task.status.clone(),
                        task.status_message.clone().unwrap_or_default(),
                        task.last_updated_at.clone().unwrap_or_default(),
                    ]);
                }
                output::print_table(&t)?;
            }
            Ok(exit(rows.is_empty() && !failures.is_empty()))
        }
        TasksCommand::Get { id, .. } => {
            let mut errors = Vec::new();
            for (session, api) in &sessions {
                match tasks::get_with_result(session, *api, &id).await {
                    Ok(detail) => {
                        if ctx.global.json {
                            let mut value = serde_json::to_value(&detail)?;
                            value["server"] = json!(session.name());
                            output::json(&value)?;
                        } else {
                            println!("{}", status_line(session.name(), "-", &detail.task));
                            if let Some(result) = &detail.result {
                                println!("{}", serde_json::to_string_pretty(result)?);
                            }
                            if let Some(error) = &detail.error {
                                output::warn(format!("the task failed: {error}"));
                            }
                        }
                        return Ok(exit(
                            detail.task.status != "completed" && detail.task.is_terminal(),
                        ));
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            Err(not_found(&id, &errors))
        }
        TasksCommand::Cancel { id, .. } => {
            let mut errors = Vec::new();
            for (session, api) in &sessions {
                match tasks::cancel(session, *api, &id).await {
                    Ok(task) => {
                        if ctx.global.json {
                            output::json(&json!({"server": session.name(), "taskId": id,
                                "cancelled": true, "task": task}))?;
                        } else {
                            println!("task {id} on `{}`: cancellation requested", session.name());
                        }
                        return Ok(ExitCode::SUCCESS);
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            Err(not_found(&id, &errors))
        }
    }
}

fn not_found(id: &str, errors: &[String]) -> anyhow::Error {
    if id.trim().is_empty() {
        return UsageError("a task id is needed".into()).into();
    }
    anyhow::anyhow!("no server could use task `{id}`: {}", errors.join("; "))
}

fn with_server(server: &str, task: &TaskInfo) -> Value {
    let mut value = serde_json::to_value(task).unwrap_or(Value::Null);
    value["server"] = json!(server);
    value
}

fn exit(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
