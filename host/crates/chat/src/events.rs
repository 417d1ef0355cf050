//! What happens during a turn, as it happens: the engine and the generation it drives send
//! these to whoever shows the turn (the terminal, a script, the gateway), so neither imports the
//! other for them.
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

use rkmcp_llm::{FinishReason, Stats};

use crate::approval::Verdict;

/// What happens during a turn, as it happens (for the terminal, or a script).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum ChatEvent {
    /// A generation starts.
    Round {
        round: u32,
    },
    /// Answer text for the user, streamed (call markers removed).
    Text {
        text: String,
    },
    /// The model's reasoning, streamed apart from the answer (never scanned for calls, not fed
    /// back in later turns).
    Reasoning {
        text: String,
    },
    /// The model asked for a valid call; approval comes next.
    ToolCall {
        id: String,
        name: String,
        server: String,
        tool: String,
        arguments: Value,
    },
    Approval {
        id: String,
        verdict: Verdict,
    },
    ToolResult {
        id: String,
        name: String,
        is_error: bool,
        duration_ms: f64,
        /// The first line of what the model is given back.
        summary: String,
    },
    /// A call that was not run (unparseable, unknown tool, invalid arguments); the error goes
    /// back to the model so it can fix it.
    Rejected {
        id: Option<String>,
        name: Option<String>,
        error: String,
    },
    /// A generation ended.
    Generated {
        stats: Stats,
        finish: FinishReason,
    },
    /// Something the user should know (limits reached, cancellation).
    Notice {
        message: String,
    },
}

/// Sends a notice (also to the log), if there is one.
pub fn notify(events: &UnboundedSender<ChatEvent>, notice: Option<String>) {
    if let Some(message) = notice {
        tracing::warn!("{message}");
        let _ = events.send(ChatEvent::Notice { message });
    }
}
