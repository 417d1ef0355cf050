//! One question through the chat engine, and how its first round is scored.
use std::collections::BTreeMap;
use std::time::Instant;

use rkmcp::chat::ChatEngine;
use rkmcp_tests::eval::{Part, Question, schema_check};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Serialize)]
pub struct CallSeen {
    pub name: String,
    pub arguments: Value,
    /// The minimal schema check here (the engine's validator already accepted it).
    pub schema_ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RejectedSeen {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub error: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct QuestionResult {
    /// The question's index in its part (what `--limit` spreads over).
    pub index: usize,
    pub part: Part,
    pub toolset: String,
    pub question: String,
    pub expect_tool: String,
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub expect_args: Map<String, Value>,
    pub tags: Vec<String>,
    pub raw: String,
    pub grammar: String,
    pub finish: Option<String>,
    pub calls: Vec<CallSeen>,
    pub rejected: Vec<RejectedSeen>,
    pub any_call: bool,
    pub right_tool: bool,
    pub right_valid: bool,
    pub right_args: bool,
    /// For "none" questions: no call attempt.
    pub no_tool_ok: bool,
    pub seconds: f64,
    pub prompt_tokens: u32,
    pub cached_tokens: u32,
    pub generated_tokens: u32,
    /// Generation time of the round (all its generations), for tok/s.
    pub generation_ms: f64,
    /// What held the output (`gbnf`, `llguidance`; empty: nothing).
    pub constraint: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl QuestionResult {
    pub fn correct(&self) -> bool {
        if self.expect_tool == "none" {
            self.no_tool_ok
        } else {
            self.right_valid
        }
    }
}

/// Lowercase, no whitespace, no trailing `/` (paths), no trailing `.`.
fn norm(s: &str) -> String {
    let squashed: String = s
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    let trimmed = squashed.trim_end_matches('.');
    let trimmed = if trimmed.len() > 1 {
        trimmed.trim_end_matches('/')
    } else {
        trimmed
    };
    trimmed.to_string()
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Numbers numerically, strings normalised ([`norm`]), `{ any = [...] }` any of them, arrays
/// element by element (same length), objects by the expected keys.
pub fn value_matches(expected: &Value, actual: &Value) -> bool {
    if let Some(any) = expected.get("any").and_then(Value::as_array) {
        return any.iter().any(|e| value_matches(e, actual));
    }
    match expected {
        Value::Number(_) => match (as_number(expected), as_number(actual)) {
            (Some(e), Some(a)) => (e - a).abs() < 1e-9,
            _ => false,
        },
        Value::String(e) => {
            let a = match actual {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return false,
            };
            norm(e) == norm(&a)
        }
        Value::Array(e) => actual.as_array().is_some_and(|a| {
            a.len() == e.len() && e.iter().zip(a).all(|(e, a)| value_matches(e, a))
        }),
        Value::Object(e) => args_match(e, actual),
        other => other == actual,
    }
}

pub fn args_match(expected: &Map<String, Value>, actual: &Value) -> bool {
    expected
        .iter()
        .all(|(k, e)| actual.get(k).is_some_and(|a| value_matches(e, a)))
}

/// Where a question comes from, for its result.
pub struct Asked<'a> {
    pub index: usize,
    pub part: Part,
    pub toolset: &'a str,
    pub question: &'a Question,
}

/// Asks one question in a fresh conversation and scores the first round.
pub async fn ask(
    engine: &mut ChatEngine,
    tools: &BTreeMap<String, Value>,
    asked: Asked<'_>,
) -> QuestionResult {
    let q = asked.question;
    engine.clear();
    let (tx, rx) = mpsc::unbounded_channel();
    drop(rx);
    let started = Instant::now();
    let outcome = engine
        .turn(&q.question, &tx, CancellationToken::new())
        .await;
    let seconds = started.elapsed().as_secs_f64();
    let mut result = QuestionResult {
        index: asked.index,
        part: asked.part,
        toolset: asked.toolset.to_string(),
        question: q.question.clone(),
        expect_tool: q.expect_tool.clone(),
        expect_args: q.expect_args.clone(),
        tags: q.tags.clone(),
        raw: String::new(),
        grammar: String::new(),
        finish: None,
        calls: Vec::new(),
        rejected: Vec::new(),
        any_call: false,
        right_tool: false,
        right_valid: false,
        right_args: false,
        no_tool_ok: false,
        seconds,
        prompt_tokens: 0,
        cached_tokens: 0,
        generated_tokens: 0,
        generation_ms: 0.0,
        constraint: String::new(),
        error: outcome.as_ref().err().map(|e| format!("{e:#}")),
    };
    let round = engine
        .transcript()
        .turns
        .last()
        .and_then(|t| t.rounds.first())
        .cloned();
    let Some(round) = round else {
        return result;
    };
    result.raw = round.raw.clone();
    result.grammar = round.grammar.clone();
    result.finish = round
        .finish
        .map(|f| {
            serde_json::to_value(f)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
        })
        .unwrap_or_default();
    // The whole turn's generations (two after `answer_directly`).
    if let Ok(outcome) = &outcome {
        let stats = &outcome.stats;
        result.prompt_tokens = stats.prompt_tokens;
        result.cached_tokens = stats.cached_tokens;
        result.generated_tokens = stats.generated_tokens;
        result.generation_ms = stats.generation_ms;
        result.constraint = stats.constraint.clone().unwrap_or_default();
    }
    result.calls = round
        .calls
        .iter()
        .map(|c| {
            let check = match tools.get(&c.name) {
                Some(schema) => schema_check(schema, &c.arguments),
                None => Err("no schema for this tool".into()),
            };
            CallSeen {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
                schema_ok: check.is_ok(),
                schema_error: check.err(),
            }
        })
        .collect();
    result.rejected = round
        .rejected
        .iter()
        .map(|r| RejectedSeen {
            name: r.name.clone(),
            error: r.error.clone(),
        })
        .collect();

    let acceptable = |name: &str| name == q.expect_tool || q.also_ok.iter().any(|n| n == name);
    result.any_call = !result.calls.is_empty() || !result.rejected.is_empty();
    result.no_tool_ok = q.expects_none() && !result.any_call;
    if !q.expects_none() {
        result.right_tool = result.calls.iter().any(|c| acceptable(&c.name))
            || result
                .rejected
                .iter()
                .any(|r| r.name.as_deref().is_some_and(acceptable));
        result.right_valid = result
            .calls
            .iter()
            .any(|c| acceptable(&c.name) && c.schema_ok);
        result.right_args = result.calls.iter().any(|c| {
            c.schema_ok
                && if c.name == q.expect_tool {
                    args_match(&q.expect_args, &c.arguments)
                } else {
                    acceptable(&c.name)
                }
        });
    }
    result
}
