//! The engine's side of calls: ids, lookup and validation, rejections, execution through the
//! [`ToolRunner`], and the results as the model reads them.
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use rkmcp_llm::Message;
use rkmcp_tool_formats::ToolCall;
use rkmcp_tool_formats::convert::{
    CallToolResultLike, ResultOptions, example_call, format_tool_result_with, result_body,
};

use super::{ChatEngine, Pending};
use crate::approval::Verdict;
use crate::events::{ChatEvent, notify};
use crate::execute::{self, Ran, Run, ToolRunner, error_result};
use crate::transcript::{CallOutcome, CallRecord, Rejection};
use crate::validate::Coercion;
use rkmcp_sessions::manager::ExposedTool;

impl ChatEngine {
    /// Gives each call an id unique in the conversation, finds its tool and validates its
    /// arguments (with safe coercions).
    pub(super) fn check_calls(&mut self, calls: Vec<ToolCall>) -> Vec<Checked> {
        calls
            .into_iter()
            .map(|mut call| {
                self.calls_made += 1;
                // Nine alphanumerics: Mistral's templates insist on that shape.
                call.id = format!("call{:05}", self.calls_made % 100_000);
                let found = self.check_call(&mut call);
                Checked { call, found }
            })
            .collect()
    }

    /// Finds the tool and validates the arguments (with safe coercions).
    fn check_call(&mut self, call: &mut ToolCall) -> Result<(ExposedTool, Vec<Coercion>), String> {
        let exposed = match self.find_tool(&call.name) {
            Some(t) => t.clone(),
            None => {
                let names: Vec<&str> = self.exposed.iter().map(|t| t.name.as_str()).collect();
                let hint = match rkmcp_config::nearest(&call.name, &names) {
                    Some(n) => format!(" Did you mean `{n}`?"),
                    None => String::new(),
                };
                return Err(format!(
                    "There is no tool named `{}`.{hint} Available tools: {}.",
                    call.name,
                    names.join(", ")
                ));
            }
        };
        // The exposed name is what the model must use from now on.
        call.name = exposed.name.clone();
        let schema = Value::Object((*exposed.tool.input_schema).clone());
        match self
            .validator
            .check(&exposed.name, &schema, &mut call.arguments)
        {
            Ok(coercions) => Ok((exposed, coercions)),
            Err(invalid) => Err(invalid.to_string()),
        }
    }

    /// The exposed name, else a server's own tool name that is unique (small models drop the
    /// `server__` prefix).
    fn find_tool(&self, name: &str) -> Option<&ExposedTool> {
        if let Some(t) = self.exposed.iter().find(|t| t.name == name) {
            return Some(t);
        }
        let mut bare = self.exposed.iter().filter(|t| t.tool.name == name);
        match (bare.next(), bare.next()) {
            (Some(t), None) => Some(t),
            _ => None,
        }
    }

    pub(super) fn example(&self) -> String {
        match self.plan.tools.first() {
            Some(t) => example_call(self.plan.format, &t.name, &serde_json::json!({})),
            None => String::new(),
        }
    }

    /// Tells the user and the model that a call was not run and why; returns the tool message
    /// for the model. The rejection itself is recorded by the caller.
    pub(super) async fn reject(
        &self,
        events: &UnboundedSender<ChatEvent>,
        rejection: Rejection,
    ) -> Message {
        let _ = events.send(ChatEvent::Rejected {
            id: rejection.id.clone(),
            name: rejection.name.clone(),
            error: rejection.error.clone(),
        });
        let call = ToolCall {
            id: rejection
                .id
                .clone()
                .unwrap_or_else(|| "call_invalid".into()),
            name: rejection.name.clone().unwrap_or_else(|| "unknown".into()),
            arguments: Value::Object(Default::default()),
        };
        let text = self
            .feed_back(&call, &error_result(&rejection.error), events)
            .await;
        Message::tool(text)
    }

    /// Runs the allowed calls through the sessions (concurrently unless `parallel_calls =
    /// false`) and returns a record and a tool message per call, in `pending`'s order.
    pub(super) async fn execute(
        &mut self,
        pending: Vec<Pending>,
        verdicts: Vec<Verdict>,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
    ) -> Vec<(CallRecord, Message)> {
        let allowed: Vec<usize> = verdicts
            .iter()
            .enumerate()
            .filter(|(_, v)| matches!(v, Verdict::Allow { .. }))
            .map(|(i, _)| i)
            .collect();
        let runs: Vec<Run<'_>> = allowed
            .iter()
            .map(|&i| Run {
                server: &pending[i].exposed.server,
                tool: pending[i].exposed.tool.name.as_ref(),
                arguments: &pending[i].call.arguments,
            })
            .collect();
        let runner: &dyn ToolRunner = &*self.sessions;
        let finished = execute::run_all(runner, &runs, self.settings.parallel_calls, cancel).await;
        drop(runs);
        let mut finished: Vec<Option<Ran>> = {
            let mut by_call: Vec<Option<Ran>> = pending.iter().map(|_| None).collect();
            for (i, ran) in allowed.into_iter().zip(finished) {
                by_call[i] = Some(ran);
            }
            by_call
        };

        let mut out = Vec::with_capacity(pending.len());
        for (i, (p, verdict)) in pending.into_iter().zip(verdicts).enumerate() {
            let mut record = CallRecord {
                id: p.call.id.clone(),
                name: p.call.name.clone(),
                server: p.exposed.server.clone(),
                tool: p.exposed.tool.name.to_string(),
                arguments: p.call.arguments.clone(),
                coercions: p.coercions,
                approval: Some(verdict.clone()),
                note: None,
                duration_ms: None,
                outcome: CallOutcome::Denied,
                result: None,
                fed_back: String::new(),
            };
            let result_like = match (&verdict, finished[i].take()) {
                (Verdict::Deny { by, reason }, _) => error_result(&format!(
                    "The call was not allowed ({by}: {reason}). Do not call it again; answer without it."
                )),
                (_, None) => error_result("The call did not run."),
                (_, Some(ran)) => {
                    record.duration_ms = ran.as_ref().map(|(ms, _)| *ms);
                    let (outcome, like, json) = execute::interpret(&ran);
                    record.outcome = outcome;
                    record.result = json;
                    like
                }
            };
            let text = self.feed_back(&p.call, &result_like, events).await;
            record.fed_back = text.clone();
            if record.duration_ms.is_some() || record.outcome == CallOutcome::Cancelled {
                let _ = events.send(ChatEvent::ToolResult {
                    id: record.id.clone(),
                    name: record.name.clone(),
                    is_error: record.outcome != CallOutcome::Ok,
                    duration_ms: record.duration_ms.unwrap_or(0.0),
                    summary: summary(&result_body(&result_like, &ResultOptions::default())),
                });
            }
            out.push((record, Message::tool(text)));
        }
        out
    }

    /// A tool result as the converter plugin or the model's format expects it. Templates that
    /// wrap tool turns themselves (Qwen) get the bare body.
    pub(super) async fn feed_back(
        &self,
        call: &ToolCall,
        result: &CallToolResultLike,
        events: &UnboundedSender<ChatEvent>,
    ) -> String {
        let opts = ResultOptions {
            max_chars: self.settings.result_max_chars,
        };
        if let Some(converter) = &self.converter {
            match converter.format_result(call, result, opts.max_chars).await {
                Ok(text) => return text,
                Err(notice) => notify(events, Some(notice)),
            }
        }
        if self.backend.info().capabilities.wraps_tool_results {
            result_body(result, &opts)
        } else {
            format_tool_result_with(self.plan.format, call, result, &opts)
        }
    }
}

/// A proposed call with its lookup and validation.
pub(super) struct Checked {
    pub(super) call: ToolCall,
    pub(super) found: Result<(ExposedTool, Vec<Coercion>), String>,
}

/// The record of a call that never reached approval.
pub(super) fn not_run(p: &Pending, outcome: CallOutcome, note: String) -> CallRecord {
    CallRecord {
        id: p.call.id.clone(),
        name: p.call.name.clone(),
        server: p.exposed.server.clone(),
        tool: p.exposed.tool.name.to_string(),
        arguments: p.call.arguments.clone(),
        coercions: p.coercions.clone(),
        approval: None,
        note: Some(note),
        duration_ms: None,
        outcome,
        result: None,
        fed_back: String::new(),
    }
}

/// The text on one line (whitespace collapsed), cut to a status-line length.
fn summary(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 100 {
        format!("{}…", flat.chars().take(100).collect::<String>())
    } else {
        flat
    }
}
