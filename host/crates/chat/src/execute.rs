//! Running approved calls: the [`ToolRunner`] the session manager implements, concurrent or
//! sequential execution with cancellation, and what each outcome tells the model.
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use rkmcp_tool_formats::convert::{CallToolResultLike, ContentItem};

use super::transcript::CallOutcome;
use rkmcp_sessions::manager::SessionManager;

/// Calls a tool of a server: what the engine needs of the MCP sessions to execute calls.
pub trait ToolRunner: Send + Sync {
    /// The `CallToolResult` as JSON, or why the request failed.
    fn call_tool<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: Option<Map<String, Value>>,
    ) -> BoxFuture<'a, anyhow::Result<Value>>;
}

impl ToolRunner for SessionManager {
    fn call_tool<'a>(
        &'a self,
        server: &'a str,
        tool: &'a str,
        arguments: Option<Map<String, Value>>,
    ) -> BoxFuture<'a, anyhow::Result<Value>> {
        Box::pin(async move {
            let session = self
                .session(server)
                .ok_or_else(|| anyhow::anyhow!("server `{server}` is not running"))?;
            let result = session.call_tool(tool, arguments).await?;
            Ok(serde_json::to_value(&result)?)
        })
    }
}

/// One approved call to run.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    pub server: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Value,
}

/// How a run ended: (milliseconds, the result as JSON or the failure). `None`: cancelled before
/// it finished.
pub type Ran = Option<(f64, anyhow::Result<Value>)>;

/// Runs `runs` (concurrently when `parallel`), until all are done or `cancel` fires; dropping
/// the calls on cancellation makes rmcp send `notifications/cancelled` to the servers.
pub async fn run_all(
    runner: &dyn ToolRunner,
    runs: &[Run<'_>],
    parallel: bool,
    cancel: &CancellationToken,
) -> Vec<Ran> {
    let futures = runs.iter().map(|r| async move {
        let started = Instant::now();
        let args = match r.arguments {
            Value::Object(m) => Some(m.clone()),
            _ => None,
        };
        let result = runner.call_tool(r.server, r.tool, args).await;
        (started.elapsed().as_secs_f64() * 1000.0, result)
    });
    tokio::select! {
        done = async {
            if parallel {
                futures::future::join_all(futures).await
            } else {
                let mut out = Vec::new();
                for f in futures {
                    out.push(f.await);
                }
                out
            }
        } => done.into_iter().map(Some).collect(),
        _ = cancel.cancelled() => runs.iter().map(|_| None).collect(),
    }
}

/// What a finished (or cancelled) run means: the outcome, the result as the model reads it, and
/// the server's result as sent (for the transcript).
pub fn interpret(ran: &Ran) -> (CallOutcome, CallToolResultLike, Option<Value>) {
    match ran {
        None => (
            CallOutcome::Cancelled,
            error_result("The call was cancelled by the user."),
            None,
        ),
        Some((_, Ok(json))) => {
            let like: CallToolResultLike =
                serde_json::from_value(json.clone()).unwrap_or_else(|err| {
                    error_result(&format!("the server's result could not be read: {err}"))
                });
            let outcome = if like.is_error {
                CallOutcome::ToolError
            } else {
                CallOutcome::Ok
            };
            (outcome, like, Some(json.clone()))
        }
        Some((_, Err(err))) => (
            CallOutcome::Failed,
            error_result(&format!("The call failed: {err:#}")),
            None,
        ),
    }
}

/// A result that tells the model `message` as an error.
pub fn error_result(message: &str) -> CallToolResultLike {
    CallToolResultLike {
        content: vec![ContentItem::Text {
            text: message.to_string(),
        }],
        is_error: true,
        structured_content: None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    /// Records calls and answers each with its arguments echoed, after `delay`.
    struct Echo {
        seen: Mutex<Vec<String>>,
        delay: Duration,
    }

    impl ToolRunner for Echo {
        fn call_tool<'a>(
            &'a self,
            server: &'a str,
            tool: &'a str,
            arguments: Option<Map<String, Value>>,
        ) -> BoxFuture<'a, anyhow::Result<Value>> {
            Box::pin(async move {
                self.seen.lock().unwrap().push(format!("{server}/{tool}"));
                tokio::time::sleep(self.delay).await;
                if tool == "fail" {
                    anyhow::bail!("connection closed");
                }
                Ok(
                    json!({"content": [{"type": "text", "text": Value::Object(arguments.unwrap_or_default()).to_string()}]}),
                )
            })
        }
    }

    #[tokio::test]
    async fn every_run_gets_its_own_outcome_in_order() {
        let runner = Echo {
            seen: Mutex::new(Vec::new()),
            delay: Duration::ZERO,
        };
        let a = json!({"x": 1});
        let runs = [
            Run {
                server: "s",
                tool: "echo",
                arguments: &a,
            },
            Run {
                server: "s",
                tool: "fail",
                arguments: &a,
            },
        ];
        let done = run_all(&runner, &runs, true, &CancellationToken::new()).await;
        let outcomes: Vec<CallOutcome> = done.iter().map(|r| interpret(r).0).collect();
        assert_eq!(outcomes, [CallOutcome::Ok, CallOutcome::Failed]);
        let (_, like, _) = interpret(&done[1]);
        assert!(like.is_error);
        assert_eq!(*runner.seen.lock().unwrap(), ["s/echo", "s/fail"]);
    }

    #[tokio::test]
    async fn cancelling_ends_every_run_as_cancelled() {
        let runner = Echo {
            seen: Mutex::new(Vec::new()),
            delay: Duration::from_secs(3600),
        };
        let a = json!({});
        let runs = [Run {
            server: "s",
            tool: "echo",
            arguments: &a,
        }];
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            c.cancel();
        });
        let done = run_all(&runner, &runs, false, &cancel).await;
        assert!(done[0].is_none());
        assert_eq!(interpret(&done[0]).0, CallOutcome::Cancelled);
    }
}
