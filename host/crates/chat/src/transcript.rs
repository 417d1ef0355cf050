//! The record of a conversation: what `ask --json` prints and `/save` writes. Everything the user
//! typed, the model wrote (raw, markers included) and the tools returned is kept.
use serde::Serialize;

use rkmcp_llm::{FinishReason, Message, Stats};

use super::approval::Verdict;
use super::named::NamedTool;
use super::validate::Coercion;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Transcript {
    /// Model file, backend and chat template.
    pub model: String,
    pub backend: String,
    pub chat_template: String,
    /// The call format and prompt style the model was asked to use.
    pub tool_format: String,
    pub prompt_style: String,
    /// The detector plugin reading the answers (`None`: the built-in detector).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detector: Option<String>,
    /// The schema-converter plugin describing the tools and results (`None`: the built-in one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converter: Option<String>,
    /// The approval-guard plugins every call is shown to, in order (`[chat.approval] guards`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guards: Vec<String>,
    /// The conversation as the model saw it last (system prompt first).
    pub messages: Vec<Message>,
    pub turns: Vec<TurnRecord>,
}

/// One user message and everything that followed until the answer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TurnRecord {
    pub user: String,
    /// Whether some tool shared words with the message (an explicit decision is asked only then).
    pub tools_match: bool,
    /// The tools the model was shown this turn, when `tool_shortlist` chose some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_listed: Option<Vec<String>>,
    /// The tools the message named (`[chat] named_tools`) and the words that named them: the
    /// first round could only call them (its grammar is then `named-tool`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub named_tools: Vec<NamedTool>,
    pub rounds: Vec<RoundRecord>,
    /// The visible text of the last round.
    pub answer: String,
    pub cancelled: bool,
    /// Why the turn ended before an answer, if it did (round limit, too many invalid calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub duration_ms: f64,
    /// The generations of the turn together: prompt tokens and cached tokens summed over them,
    /// prefill speed over the tokens actually processed, generation speed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    /// Where the tools of the turn's first round came from: the servers, or the list remembered
    /// from the last run (`ask` starts from it while the servers start).
    pub tool_list: crate::remembered::ToolListSource,
}

/// One generation and the calls it asked for.
#[derive(Debug, Clone, Serialize)]
pub struct RoundRecord {
    pub round: u32,
    /// The model's `answer_directly` choice (`tool_decision = "explicit"`), when it answered
    /// without a tool; `raw` is then the answer it wrote next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// The model's output as generated, call markers included.
    pub raw: String,
    /// What the user was shown as the answer.
    pub text: String,
    /// The model's reasoning, recorded apart from the answer.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    pub finish: Option<FinishReason>,
    pub stats: Option<Stats>,
    /// `none`, `call-or-answer`, `call-only`, `tool-or-answer_directly` (then `answer-only` if it
    /// chose to answer), `named-tool` (a call of a tool the user named, see
    /// [`TurnRecord::named_tools`]), `answer-only` (after a repeated call), `converter plugin` (its
    /// grammar) or `user` (--grammar).
    pub grammar: String,
    /// Whether the round was decoded greedily (`greedy_tool_rounds`: a round that must call
    /// or follows calls).
    pub greedy: bool,
    /// Tools left out of this round's grammar (they answered already; `after_result`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
    pub calls: Vec<CallRecord>,
    /// Attempts that were not executed and were handed back to the model.
    pub rejected: Vec<Rejection>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallRecord {
    pub id: String,
    /// The name the model used (exposed, namespaced).
    pub name: String,
    pub server: String,
    /// The server's own tool name.
    pub tool: String,
    pub arguments: serde_json::Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub coercions: Vec<Coercion>,
    /// Who allowed or denied the call; absent for calls that never reached approval (a
    /// duplicate, a repeat, the round limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<Verdict>,
    /// Why a call that never reached approval did not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Absent when the call did not run (denied, cancelled before it started).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    pub outcome: CallOutcome,
    /// The MCP `CallToolResult` as the server sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// What the model was given back.
    pub fed_back: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    Ok,
    /// The tool ran and reported an error (`isError`).
    ToolError,
    /// The request failed (transport, timeout, server error).
    Failed,
    Denied,
    Cancelled,
    /// The round limit was reached before it could run.
    NotRun,
    /// The same call as an earlier one in the same answer, which ran instead.
    Duplicate,
    /// The same call as one that already ran this turn; the model answers from its result.
    Repeat,
}

#[derive(Debug, Clone, Serialize)]
pub struct Rejection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model's text for a call that could not be parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    pub error: String,
}
