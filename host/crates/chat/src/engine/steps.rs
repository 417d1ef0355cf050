//! The engine's side of a call written a piece at a time ([`crate::steps`]): one short
//! generation for the tool's name, then one per argument, each continuing the text of the call
//! so far. The calls and answers it yields go on through the turn as a detector's would.
use serde_json::{Map, Value};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use rkmcp_llm::{FinishReason, GenerateRequest, Stats};
use rkmcp_tool_formats::{ToolCall, reasoning_open_in_prompt};

use super::ChatEngine;
use crate::events::{ChatEvent, notify};
use crate::generation::{Detected, Generated};
use crate::round::CallSteps;
use crate::steps;

/// Tokens for the name step: the longest tool name and its quote fit.
const NAME_TOKENS: u32 = 48;
/// Tokens for one value: a string of the message's length, a list of a few; a value that runs
/// on past it is unreadable and goes back to the model.
const VALUE_TOKENS: u32 = 160;

/// One step's outcome.
enum Step {
    Wrote(String, Stats),
    Cancelled,
}

impl ChatEngine {
    /// The round's call (or its `answer_directly`) written in steps. `None` when the steps do
    /// not apply after all, and the round is generated in one breath instead: the prompt opened
    /// a reasoning block (the model reasons before it calls), or the name step was not held to
    /// the names (its grammar did not compile for this model).
    pub(super) async fn generate_in_steps(
        &mut self,
        plan: &CallSteps,
        base: &GenerateRequest,
        events: &UnboundedSender<ChatEvent>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Option<Generated>> {
        match self.backend.render(base.messages.clone()).await {
            Ok(prompt) if !reasoning_open_in_prompt(&prompt) => {}
            _ => return Ok(None),
        }
        notify(events, self.plan.format_notice.take());
        let names = steps::choices(&plan.tools, plan.answer_directly);
        let mut stats = Vec::new();
        let prefix = plan.call.name_prefix().to_string();
        let grammar = steps::name_grammar(&names);
        let written = match self
            .step(base, prefix, grammar, NAME_TOKENS, cancel)
            .await?
        {
            Step::Wrote(text, s) => {
                stats.push(s);
                text
            }
            Step::Cancelled => return Ok(Some(cancelled())),
        };
        let Some(name) = steps::chosen(&written, &names) else {
            tracing::debug!("the name step wrote {written:?}, not one of {names:?}: one breath");
            return Ok(None);
        };
        let message = self.last_user_message().unwrap_or_default().to_string();
        let mut arguments = Map::new();
        // `answer_directly` is no tool of the round: it has no arguments.
        if let Some(tool) = plan.tools.iter().find(|t| t.name == name) {
            let asked = steps::argument_steps(tool, &message);
            let grounding = self.grounding();
            // What the call holds so far, no longer preferred by grounding (`steps::unspent`).
            let mut spent: Vec<String> = vec![name.to_string()];
            if let Some((_, bare)) = name.split_once("__") {
                spent.push(bare.to_string());
            }
            let mut done: Vec<(&steps::ArgumentStep, String)> = Vec::new();
            for step in &asked {
                let prefix = steps::value_prefix(&plan.call, name, &done, step);
                let grammar = steps::step_grammar(tool, step, grounding.as_ref());
                let mut request = base.clone();
                if !request.prefer.is_empty() {
                    let spent: Vec<&str> = spent.iter().map(String::as_str).collect();
                    request.prefer = vec![steps::unspent(&message, &spent)];
                }
                let text = match self
                    .step(&request, prefix.clone(), grammar, VALUE_TOKENS, cancel)
                    .await?
                {
                    Step::Wrote(text, s) => {
                        stats.push(s);
                        text
                    }
                    Step::Cancelled => return Ok(Some(cancelled())),
                };
                match steps::read_value(&text) {
                    Ok(written) => {
                        steps::value_texts(&written.value, &mut spent);
                        arguments.insert(step.name.clone(), written.value);
                        done.push((step, written.json));
                    }
                    Err(err) => {
                        let raw = format!("{prefix}{text}");
                        let error =
                            format!("the value of `{}` could not be read: {err}", step.name);
                        return Ok(Some(finished(
                            &stats,
                            events,
                            raw.clone(),
                            Detected {
                                malformed: vec![(raw, error)],
                                ..Detected::default()
                            },
                        )));
                    }
                }
            }
        }
        let arguments = Value::Object(arguments);
        let raw = plan.call.finished(name, &arguments);
        let call = ToolCall {
            id: String::new(),
            name: name.to_string(),
            arguments,
        };
        Ok(Some(finished(
            &stats,
            events,
            raw,
            Detected {
                calls: vec![call],
                ..Detected::default()
            },
        )))
    }

    /// One step: the prompt, then `prefix` as the start of the answer, continued as `guide`
    /// allows, greedily or as the round's request says.
    async fn step(
        &self,
        base: &GenerateRequest,
        prefix: String,
        guide: String,
        max_new_tokens: u32,
        cancel: &CancellationToken,
    ) -> anyhow::Result<Step> {
        let mut request = base.clone();
        request.grammar = None;
        request.guide = Some(guide);
        request.assistant_prefix = Some(prefix);
        request.max_new_tokens = Some(
            base.max_new_tokens
                .map_or(max_new_tokens, |m| m.min(max_new_tokens)),
        );
        let stream = self.backend.generate(request);
        let abort = stream.abort.clone();
        tokio::select! {
            result = stream.finish() => {
                let g = result.map_err(|err| anyhow::anyhow!("the model failed: {err}"))?;
                Ok(Step::Wrote(g.text, g.stats))
            }
            _ = cancel.cancelled() => {
                abort.abort();
                Ok(Step::Cancelled)
            }
        }
    }
}

/// The steps' generation as one: their figures added up, said once.
fn finished(
    stats: &[Stats],
    events: &UnboundedSender<ChatEvent>,
    raw: String,
    detected: Detected,
) -> Generated {
    let total = Stats::total(stats);
    let _ = events.send(ChatEvent::Generated {
        stats: total.clone(),
        finish: FinishReason::EndOfTurn,
    });
    Generated {
        raw,
        finished: Some((FinishReason::EndOfTurn, total)),
        detected,
    }
}

/// A cancelled step: nothing said (the scratch text is not the model's answer), no call.
fn cancelled() -> Generated {
    Generated {
        raw: String::new(),
        finished: None,
        detected: Detected::default(),
    }
}
