//! Tasks: tool calls that a server runs in the background, polled until they end.
//!
//! Two protocols, one flow ([`call_as_task`]): create the task, poll its status with backoff
//! (announced as [`SessionEvent::Task`] so front ends show status and progress), answer what
//! the task asks for, fetch the result and return it as an ordinary `CallToolResult`. Dropping
//! the call (Ctrl-C in the chat) cancels the task on the server.
//!
//! - **2025-11-25** (tasks in the core spec): `tools/call` with a `task` field returns
//!   `{"task": …}`; `tasks/get` polls, `tasks/result` fetches the result (and, while the task is
//!   `input_required`, carries the server's elicitation/sampling requests); `tasks/list`,
//!   `tasks/cancel`. rmcp 3.11 models only the 2026 extension, so these go out as custom requests
//!   and the answers are read from their JSON. rmcp also drops the 2025-11-25 `tasks` server
//!   capability and a tool's `execution.taskSupport` while parsing, so whether a server has tasks
//!   is asked once per connection (a `tasks/get` for an unknown id: "invalid params" means the
//!   method exists, "method not found" that it does not). Only tools whose listing says
//!   `execution.taskSupport` "optional"/"required" are called as tasks (the spec's rule; the
//!   field is kept for rkmcp in the tool's `_meta`, see `decode::keep_task_support`, which
//!   stdio servers' lists pass through). A tool the server still refuses to run as a task
//!   (-32601/-32602) is called plainly and remembered.
//! - **2026-07-28** (the `io.modelcontextprotocol/tasks` extension, SEP-2663): rkmcp declares the
//!   extension; a server that declares it too may answer `tools/call` with `resultType: "task"`.
//!   `tasks/get` carries the result or error inline and the input requests of an
//!   `input_required` task, answered with `tasks/update`; `tasks/cancel` is an acknowledgement.
//!   There is no `tasks/list`. This side uses rmcp's typed requests.
//
// Sampling and roots (answered for `input_required` tasks) are deprecated by SEP-2577.
#![allow(deprecated)]
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientRequest,
    CustomRequest, ErrorCode, GetTaskParams, InputRequest, InputRequests, InputResponses,
    ListRootsResult, ServerResult, UpdateTaskParams,
};
use serde_json::{Value, json};

use super::lock;
use super::session::{MAX_INPUT_ROUNDS, Session, SessionError, SessionEvent};

/// The extension's identifier, declared in rkmcp's client capabilities.
pub const TASKS_EXTENSION: &str = rmcp::model::TASKS_EXTENSION_ID;

/// How long rkmcp asks a 2025-11-25 server to keep a task (the server may choose otherwise).
pub const REQUESTED_TTL_MS: u64 = 10 * 60 * 1000;

/// How long the once-per-connection question "does this 2025-11-25 server have tasks?" may
/// take: a server that leaves an unknown method unanswered must not hold up its first call.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Polling bounds: the server's `pollInterval` is honoured within these; without one, polling
/// starts at [`FIRST_POLL`] and backs off by half each unchanged poll up to [`MAX_POLL`].
pub const MIN_POLL: Duration = Duration::from_millis(50);
pub const FIRST_POLL: Duration = Duration::from_millis(250);
pub const MAX_POLL: Duration = Duration::from_secs(5);

/// Which task protocol a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskApi {
    /// 2025-11-25: tasks in the core protocol (`tasks/list`, `tasks/result`).
    Core2025,
    /// 2026-07-28: the tasks extension (`tasks/update`, results inline).
    Extension,
}

/// A task's state as the server last reported it, in one shape for both protocols.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskInfo {
    pub task_id: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl TaskInfo {
    /// Reads a task from either protocol's JSON (`ttl`/`ttlMs`, `pollInterval`/`pollIntervalMs`).
    /// Text fields are made safe to print: they come from the server.
    pub fn from_json(value: &Value) -> Option<TaskInfo> {
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(super::client_requests::terminal_safe)
        };
        let number = |keys: [&str; 2]| keys.iter().find_map(|k| value.get(*k)?.as_u64());
        Some(TaskInfo {
            task_id: text("taskId")?,
            status: text("status")?,
            status_message: text("statusMessage"),
            created_at: text("createdAt"),
            last_updated_at: text("lastUpdatedAt"),
            ttl_ms: number(["ttlMs", "ttl"]),
            poll_interval_ms: number(["pollIntervalMs", "pollInterval"]),
        })
    }

    /// `completed`, `failed` and `cancelled` end a task.
    pub fn is_terminal(&self) -> bool {
        matches!(self.status.as_str(), "completed" | "failed" | "cancelled")
    }
}

/// A task with what `tasks/get` (and `tasks/result`) said about its outcome.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TaskDetail {
    pub task: TaskInfo,
    /// The result of the original request, once the task completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The JSON-RPC error of a failed task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// What an `input_required` task asks (2026-07-28).
    #[serde(rename = "inputRequests", skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Value>,
}

/// The next poll delay: the server's interval when it gave one (within [`MIN_POLL`] and
/// [`MAX_POLL`]); otherwise [`FIRST_POLL`] after a change and half as long again after each
/// unchanged poll, up to [`MAX_POLL`]. Pure, so the policy is tested as data.
pub fn next_poll(previous: Option<Duration>, hint_ms: Option<u64>, changed: bool) -> Duration {
    if let Some(ms) = hint_ms {
        return Duration::from_millis(ms).clamp(MIN_POLL, MAX_POLL);
    }
    match previous {
        Some(prev) if !changed => (prev + prev / 2).min(MAX_POLL),
        _ => FIRST_POLL,
    }
}

/// Per-connection knowledge about tasks, kept by the session.
#[derive(Debug, Default)]
pub struct TaskSupport {
    /// `(restart epoch, the server has 2025-11-25 tasks)`, learned by the first call.
    probed: Mutex<Option<(u32, bool)>>,
    /// Tools the server refused to run as tasks.
    plain_tools: Mutex<HashSet<String>>,
}

/// The task protocol to use for `tool` on this session, if any.
pub async fn api_for(session: &Session, tool: &str) -> Option<TaskApi> {
    if session.is_stateless() {
        let declared = session
            .server_info()
            .is_some_and(|info| info.capabilities.supports_tasks());
        return declared.then_some(TaskApi::Extension);
    }
    // 2025-11-25: only a tool that declares `execution.taskSupport` may be called as a task
    // (read from stdio servers' lists; see `decode::keep_task_support`). Asking anyway made a
    // TypeScript-SDK server run the tool, fail the call, and run it again on the plain retry.
    let declared = session
        .catalog()
        .tools
        .iter()
        .any(|t| t.name == tool && super::decode::allows_tasks(t));
    if !declared || lock(&session.tasks.plain_tools).contains(tool) {
        return None;
    }
    supports_core_tasks(session)
        .await
        .then_some(TaskApi::Core2025)
}

/// Whether a 2025-11-25 server serves `tasks/*`, asked once per connection.
async fn supports_core_tasks(session: &Session) -> bool {
    let epoch = session.restarts();
    if let Some((at, known)) = *lock(&session.tasks.probed)
        && at == epoch
    {
        return known;
    }
    let peer = session.peer();
    let probe = custom(&peer, "tasks/get", json!({"taskId": "rkmcp-probe"}));
    let limit = session.config.request_timeout.min(PROBE_TIMEOUT);
    let known = match tokio::time::timeout(limit, probe).await {
        Ok(Ok(_)) => true,
        Ok(Err(rmcp::ServiceError::McpError(e))) => e.code != ErrorCode::METHOD_NOT_FOUND,
        // A server that does not answer an unknown method promptly runs no tasks either.
        Err(_) => false,
        // The connection failed: ask again on the next call (or after the restart).
        Ok(Err(_)) => return false,
    };
    *lock(&session.tasks.probed) = Some((epoch, known));
    known
}

async fn custom(
    peer: &rmcp::Peer<rmcp::RoleClient>,
    method: &str,
    params: Value,
) -> Result<Value, rmcp::ServiceError> {
    let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let result: ServerResult = peer.send_request(request).await?;
    // rmcp parses every answer into its own types (a 2025-11-25 task may come back as its
    // 2026 `GetTaskResult`); the JSON form is what both protocols share.
    serde_json::to_value(&result).map_err(|e| {
        rmcp::ServiceError::McpError(rmcp::ErrorData::internal_error(
            format!("cannot read the server's answer to {method}: {e}"),
            None,
        ))
    })
}

/// What the first request of a task-augmented call returned.
enum Started {
    Done(CallToolResult),
    Task(TaskInfo),
    /// The server does not run this tool as a task: call it plainly.
    Plain,
}

/// Runs `tools/call` as a task (see the module docs). `Ok(None)`: the server would not run
/// this tool as a task; the caller calls it plainly.
pub async fn call_as_task(
    session: &Session,
    api: TaskApi,
    params: CallToolRequestParams,
) -> Result<Option<CallToolResult>, SessionError> {
    let tool = params.name.to_string();
    let started = match api {
        TaskApi::Core2025 => start_core(session, &params).await?,
        TaskApi::Extension => start_extension(session, params).await?,
    };
    let task = match started {
        Started::Done(result) => return Ok(Some(result)),
        Started::Plain => {
            lock(&session.tasks.plain_tools).insert(tool);
            return Ok(None);
        }
        Started::Task(task) => task,
    };
    let guard = CancelOnDrop {
        peer: session.peer(),
        api,
        task_id: task.task_id.clone(),
        server: session.name().to_string(),
        armed: true,
    };
    let result = follow(session, api, &tool, task).await;
    guard.disarm();
    result.map(Some)
}

async fn start_core(
    session: &Session,
    params: &CallToolRequestParams,
) -> Result<Started, SessionError> {
    let mut wire = serde_json::to_value(params).unwrap_or_else(|_| json!({}));
    wire["task"] = json!({"ttl": REQUESTED_TTL_MS});
    let what = format!("calling tool `{}` as a task", params.name);
    let answer = session
        .timed(what.clone(), async {
            match custom(&session.peer(), "tools/call", wire).await {
                Err(rmcp::ServiceError::McpError(e))
                    if e.code == ErrorCode::METHOD_NOT_FOUND
                        || e.code == ErrorCode::INVALID_PARAMS =>
                {
                    Ok(None)
                }
                other => other.map(Some),
            }
        })
        .await?;
    let Some(answer) = answer else {
        return Ok(Started::Plain);
    };
    if let Some(task) = answer.get("task").and_then(TaskInfo::from_json) {
        return Ok(Started::Task(task));
    }
    // The server ran it at once (it ignores `task` for this tool).
    serde_json::from_value(answer)
        .map(Started::Done)
        .map_err(|e| request_error(session, &what, format!("unreadable result: {e}")))
}

async fn start_extension(
    session: &Session,
    mut params: CallToolRequestParams,
) -> Result<Started, SessionError> {
    let what = format!("calling tool `{}`", params.name);
    for _ in 0..MAX_INPUT_ROUNDS {
        let peer = session.peer();
        let response = session
            .timed(what.clone(), peer.call_tool_once(params.clone()))
            .await?;
        match response {
            CallToolResponse::Complete(result) => return Ok(Started::Done(result)),
            CallToolResponse::Task(created) => {
                let value = serde_json::to_value(&created.task).unwrap_or(Value::Null);
                return TaskInfo::from_json(&value)
                    .map(Started::Task)
                    .ok_or_else(|| request_error(session, &what, "unreadable task".into()));
            }
            CallToolResponse::InputRequired(input) => {
                // A multi-round call before (or instead of) a task: answer and retry.
                if input.input_requests.is_none() && input.request_state.is_none() {
                    return Err(request_error(
                        session,
                        &what,
                        "input_required without requests or state".into(),
                    ));
                }
                params.input_responses = Some(
                    answer_inputs(session, input.input_requests.unwrap_or_default())
                        .await
                        .map_err(|m| request_error(session, &what, m))?,
                )
                .filter(|r| !r.is_empty());
                params.request_state = input.request_state;
            }
            _ => return Err(request_error(session, &what, "unexpected answer".into())),
        }
    }
    Err(request_error(
        session,
        &what,
        format!("more than {MAX_INPUT_ROUNDS} input rounds"),
    ))
}

/// Polls until the task ends; returns its result.
async fn follow(
    session: &Session,
    api: TaskApi,
    tool: &str,
    mut task: TaskInfo,
) -> Result<CallToolResult, SessionError> {
    let what = format!("task `{}` of tool `{tool}`", task.task_id);
    announce(session, tool, &task);
    let mut delay = None;
    loop {
        if task.is_terminal() || (api == TaskApi::Core2025 && task.status == "input_required") {
            break;
        }
        let wait = next_poll(delay, task.poll_interval_ms, delay.is_none());
        tokio::time::sleep(wait).await;
        let detail = get(session, api, &task.task_id).await?;
        if api == TaskApi::Extension && detail.task.status == "input_required" {
            respond_in_task(session, &detail).await?;
        }
        let changed =
            detail.task.status != task.status || detail.task.status_message != task.status_message;
        if changed {
            announce(session, tool, &detail.task);
        }
        delay = if changed { None } else { Some(wait) };
        task = detail.task;
        if api == TaskApi::Extension && task.is_terminal() {
            return outcome(session, &what, &task, detail.result, detail.error);
        }
    }
    // 2025-11-25: `tasks/result` returns the result (or the error) and, for an
    // `input_required` task, lets the server ask its questions while it waits.
    let waiting = task.status == "input_required";
    let peer = session.peer();
    let fetch = custom(&peer, "tasks/result", json!({"taskId": task.task_id}));
    let answer = if waiting {
        fetch.await.map_err(|e| service_error(session, &what, e))?
    } else {
        session.timed(what.clone(), fetch).await?
    };
    if task.status == "cancelled" {
        return outcome(session, &what, &task, None, None);
    }
    let done = TaskInfo {
        status: "completed".into(),
        ..task.clone()
    };
    if waiting {
        announce(session, tool, &done);
    }
    outcome(session, &what, &done, Some(answer), None)
}

fn announce(session: &Session, tool: &str, task: &TaskInfo) {
    session.emit(SessionEvent::Task {
        server: session.name().to_string(),
        tool: tool.to_string(),
        task: task.clone(),
    });
}

/// The result of an ended task, or why it has none.
fn outcome(
    session: &Session,
    what: &str,
    task: &TaskInfo,
    result: Option<Value>,
    error: Option<Value>,
) -> Result<CallToolResult, SessionError> {
    match task.status.as_str() {
        "completed" => {
            let result = result
                .ok_or_else(|| request_error(session, what, "completed without a result".into()))?;
            serde_json::from_value(result)
                .map_err(|e| request_error(session, what, format!("unreadable result: {e}")))
        }
        "cancelled" => Err(request_error(
            session,
            what,
            "the task was cancelled".into(),
        )),
        _ => {
            let message = error
                .as_ref()
                .map(describe_error)
                .or_else(|| task.status_message.clone())
                .unwrap_or_else(|| "no reason given".into());
            Err(request_error(
                session,
                what,
                format!("the task failed: {message}"),
            ))
        }
    }
}

fn describe_error(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(super::client_requests::terminal_safe)
        .unwrap_or_else(|| error.to_string());
    match error.get("code").and_then(Value::as_i64) {
        Some(code) => format!("{message} (JSON-RPC error {code})"),
        None => message,
    }
}

fn request_error(session: &Session, what: &str, message: String) -> SessionError {
    SessionError::Request {
        server: session.name().to_string(),
        what: what.to_string(),
        message,
    }
}

fn service_error(session: &Session, what: &str, err: rmcp::ServiceError) -> SessionError {
    let message = match &err {
        rmcp::ServiceError::McpError(data) => {
            format!("{} (JSON-RPC error {})", data.message, data.code.0)
        }
        other => other.to_string(),
    };
    request_error(session, what, message)
}

/// Answers an `input_required` task's requests (2026-07-28) with `tasks/update`.
async fn respond_in_task(session: &Session, detail: &TaskDetail) -> Result<(), SessionError> {
    let task_id = &detail.task.task_id;
    let what = format!("answering the questions of task `{task_id}`");
    let Some(requests) = &detail.input_requests else {
        return Ok(());
    };
    let requests: InputRequests = serde_json::from_value(requests.clone())
        .map_err(|e| request_error(session, &what, format!("unreadable inputRequests: {e}")))?;
    let responses = answer_inputs(session, requests)
        .await
        .map_err(|m| request_error(session, &what, m))?;
    let peer = session.peer();
    session
        .timed(
            what,
            peer.update_task(UpdateTaskParams::new(task_id.as_str(), responses)),
        )
        .await
}

/// Answers input requests with the session's [`super::ClientRequests`] (the same answers as
/// requests sent mid-call).
async fn answer_inputs(
    session: &Session,
    requests: InputRequests,
) -> Result<InputResponses, String> {
    let client = session.client_requests();
    let server = session.name().to_string();
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let answer = match request {
            InputRequest::CreateMessage(r) => client
                .create_message(&server, r.params)
                .await
                .and_then(|r| to_json(&r)),
            InputRequest::Elicitation(r) => client
                .elicit(&server, r.params)
                .await
                .and_then(|r| to_json(&r)),
            InputRequest::ListRoots(_) => to_json(&ListRootsResult::new(client.roots())),
            _ => Err(rmcp::ErrorData::invalid_params(
                "rkmcp cannot answer this kind of input request",
                None,
            )),
        };
        let answer = answer.map_err(|e| format!("input request `{key}`: {}", e.message))?;
        responses.insert(key, answer);
    }
    Ok(responses)
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, rmcp::ErrorData> {
    serde_json::to_value(value).map_err(|e| rmcp::ErrorData::internal_error(e.to_string(), None))
}

/// `tasks/get`, with the outcome where the protocol carries it inline.
pub async fn get(
    session: &Session,
    api: TaskApi,
    task_id: &str,
) -> Result<TaskDetail, SessionError> {
    let what = format!("getting task `{task_id}`");
    let value = match api {
        TaskApi::Core2025 => {
            session
                .timed(
                    what.clone(),
                    custom(&session.peer(), "tasks/get", json!({"taskId": task_id})),
                )
                .await?
        }
        TaskApi::Extension => {
            let peer = session.peer();
            let got = session
                .timed(what.clone(), peer.get_task(GetTaskParams::new(task_id)))
                .await?;
            serde_json::to_value(&got).unwrap_or(Value::Null)
        }
    };
    let task = TaskInfo::from_json(&value)
        .ok_or_else(|| request_error(session, &what, "the answer is not a task".into()))?;
    Ok(TaskDetail {
        task,
        result: value.get("result").cloned(),
        error: value.get("error").cloned(),
        input_requests: value.get("inputRequests").cloned(),
    })
}

/// `tasks/get`, plus (2025-11-25) `tasks/result` for a completed or failed task.
pub async fn get_with_result(
    session: &Session,
    api: TaskApi,
    task_id: &str,
) -> Result<TaskDetail, SessionError> {
    let mut detail = get(session, api, task_id).await?;
    if api == TaskApi::Core2025 && matches!(detail.task.status.as_str(), "completed" | "failed") {
        let fetched = session
            .timed(
                format!("fetching the result of task `{task_id}`"),
                custom(&session.peer(), "tasks/result", json!({"taskId": task_id})),
            )
            .await;
        match fetched {
            Ok(result) => detail.result = Some(result),
            Err(SessionError::Request { message, .. }) => detail.error = Some(json!(message)),
            Err(other) => return Err(other),
        }
    }
    Ok(detail)
}

/// `tasks/list` (2025-11-25 only), every page.
pub async fn list(session: &Session, api: TaskApi) -> Result<Vec<TaskInfo>, SessionError> {
    let what = "listing tasks".to_string();
    if api == TaskApi::Extension {
        return Err(request_error(
            session,
            &what,
            "the server speaks 2026-07-28, whose tasks extension has no tasks/list; \
             ask for one task with `rkmcp tasks get ID`"
                .into(),
        ));
    }
    let mut tasks = Vec::new();
    let mut cursor: Option<String> = None;
    // A server repeating a cursor would loop forever; pages are bounded.
    for _ in 0..1000 {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = session
            .timed(what.clone(), custom(&session.peer(), "tasks/list", params))
            .await?;
        tasks.extend(
            page.get("tasks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(TaskInfo::from_json),
        );
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    Ok(tasks)
}

/// `tasks/cancel`. The 2025-11-25 answer is the task; the extension's is an acknowledgement.
pub async fn cancel(
    session: &Session,
    api: TaskApi,
    task_id: &str,
) -> Result<Option<TaskInfo>, SessionError> {
    let what = format!("cancelling task `{task_id}`");
    match api {
        TaskApi::Core2025 => {
            let value = session
                .timed(
                    what,
                    custom(&session.peer(), "tasks/cancel", json!({"taskId": task_id})),
                )
                .await?;
            Ok(TaskInfo::from_json(&value))
        }
        TaskApi::Extension => {
            let peer = session.peer();
            session
                .timed(what, peer.cancel_task(CancelTaskParams::new(task_id)))
                .await?;
            Ok(None)
        }
    }
}

/// The task protocol of a session, for `rkmcp tasks`: like [`api_for`] without a tool.
pub async fn session_api(session: &Session) -> Result<TaskApi, SessionError> {
    let api = if session.is_stateless() {
        session
            .server_info()
            .is_some_and(|info| info.capabilities.supports_tasks())
            .then_some(TaskApi::Extension)
    } else {
        supports_core_tasks(session)
            .await
            .then_some(TaskApi::Core2025)
    };
    api.ok_or_else(|| SessionError::Request {
        server: session.name().to_string(),
        what: "using tasks".into(),
        message: "the server does not offer tasks (neither 2025-11-25 tasks nor the \
                  io.modelcontextprotocol/tasks extension)"
            .into(),
    })
}

/// Cancellations started by dropped calls, so a command can wait for them before it exits.
static PENDING_CANCELS: Mutex<Vec<tokio::task::JoinHandle<()>>> = Mutex::new(Vec::new());

/// Waits (at most `limit`) for the `tasks/cancel` requests of dropped calls to be sent.
pub async fn flush_cancels(limit: Duration) {
    let pending: Vec<_> = std::mem::take(&mut *lock(&PENDING_CANCELS));
    let _ = tokio::time::timeout(limit, futures::future::join_all(pending)).await;
}

/// Sends `tasks/cancel` when a task's call is dropped before the task ended (Ctrl-C).
struct CancelOnDrop {
    peer: rmcp::Peer<rmcp::RoleClient>,
    api: TaskApi,
    task_id: String,
    server: String,
    armed: bool,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (peer, api, task_id, server) = (
            self.peer.clone(),
            self.api,
            self.task_id.clone(),
            self.server.clone(),
        );
        let handle = runtime.spawn(async move {
            let sent = match api {
                TaskApi::Core2025 => custom(&peer, "tasks/cancel", json!({"taskId": task_id}))
                    .await
                    .map(|_| ()),
                TaskApi::Extension => peer.cancel_task(CancelTaskParams::new(&task_id)).await,
            };
            match sent {
                Ok(()) => tracing::info!(server = %server, "task `{task_id}` cancelled"),
                Err(e) => tracing::warn!(server = %server, "cancelling task `{task_id}`: {e}"),
            }
        });
        let mut pending = lock(&PENDING_CANCELS);
        pending.retain(|h| !h.is_finished());
        pending.push(handle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_honours_the_server_within_bounds() {
        assert_eq!(next_poll(None, Some(100), true), Duration::from_millis(100));
        assert_eq!(next_poll(None, Some(1), true), MIN_POLL);
        assert_eq!(next_poll(None, Some(600_000), false), MAX_POLL);
    }

    #[test]
    fn polling_backs_off_while_nothing_changes() {
        let first = next_poll(None, None, true);
        assert_eq!(first, FIRST_POLL);
        let second = next_poll(Some(first), None, false);
        assert!(second > first, "{second:?}");
        let mut d = second;
        for _ in 0..20 {
            d = next_poll(Some(d), None, false);
        }
        assert_eq!(d, MAX_POLL);
        assert_eq!(
            next_poll(Some(d), None, true),
            FIRST_POLL,
            "a change resets"
        );
    }

    #[test]
    fn tasks_of_both_versions_read_alike() {
        let core = json!({"taskId": "t1", "status": "working", "statusMessage": "step \u{1b}[2m1",
            "createdAt": "x", "lastUpdatedAt": "y", "ttl": 60000, "pollInterval": 100});
        let ext = json!({"resultType": "complete", "taskId": "t1", "status": "working",
            "statusMessage": "step \u{1b}[2m1", "createdAt": "x", "lastUpdatedAt": "y",
            "ttlMs": 60000, "pollIntervalMs": 100});
        let a = TaskInfo::from_json(&core).unwrap();
        assert_eq!(a, TaskInfo::from_json(&ext).unwrap());
        assert_eq!(a.poll_interval_ms, Some(100));
        assert_eq!(a.status_message.as_deref(), Some("step [2m1"));
        assert!(!a.is_terminal());
        assert!(TaskInfo::from_json(&json!({"status": "working"})).is_none());
    }

    #[test]
    fn errors_are_described_with_their_code() {
        assert_eq!(
            describe_error(&json!({"code": -32603, "message": "boom"})),
            "boom (JSON-RPC error -32603)"
        );
    }
}
