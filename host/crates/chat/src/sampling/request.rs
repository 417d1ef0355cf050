//! A server's `sampling/createMessage` turned into a generation for the local model, and the
//! model's output turned back into the result the server gets. The conversation here is the
//! server's alone: it never touches the user's chat history.
#![allow(deprecated)] // sampling is deprecated by SEP-2577, but servers still use it.

use rkmcp_llm::{FinishReason, Message, Role as LlmRole};
use rkmcp_tool_formats::ToolFormat;
use rkmcp_tool_formats::convert::{ToolDef, example_call};
use rmcp::model::{
    ContextInclusion, CreateMessageRequestParams, CreateMessageResult, Role, SamplingMessage,
    SamplingMessageContentBlock, ToolChoiceMode,
};
use serde_json::Value;

use crate::settings::ToolChoice;

/// Why a request cannot run. Each message names the server and what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum SamplingError {
    #[error("{0}")]
    Denied(String),
    #[error(
        "sampling request from server `{server}`: message {index} contains {what}; the local model reads text only"
    )]
    Unsupported {
        server: String,
        index: usize,
        what: &'static str,
    },
    #[error("sampling request from server `{server}` has no messages")]
    Empty { server: String },
    #[error("sampling request from server `{server}`: the model failed")]
    Model {
        server: String,
        #[source]
        source: rkmcp_llm::LlmError,
    },
    #[error("sampling request from server `{server}`: the local model could not be loaded")]
    ModelLoad {
        server: String,
        #[source]
        source: rkmcp_llm::LlmError,
    },
    #[error("sampling request from server `{server}`: the user declined the generated answer")]
    AnswerRejected { server: String },
    #[error(
        "sampling request from server `{server}` stopped: the user's own turn needed the model \
         (it always comes first); send the request again later"
    )]
    Interrupted { server: String },
}

impl SamplingError {
    /// The JSON-RPC error the server gets: -1 is the spec's "user rejected sampling request".
    pub fn to_error_data(&self) -> rmcp::ErrorData {
        let code = match self {
            SamplingError::Denied(_) | SamplingError::AnswerRejected { .. } => {
                rmcp::model::ErrorCode(-1)
            }
            SamplingError::Unsupported { .. } | SamplingError::Empty { .. } => {
                rmcp::model::ErrorCode::INVALID_PARAMS
            }
            SamplingError::Model { .. }
            | SamplingError::ModelLoad { .. }
            | SamplingError::Interrupted { .. } => rmcp::model::ErrorCode::INTERNAL_ERROR,
        };
        rmcp::ErrorData::new(code, error_chain(self), None)
    }
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A request ready for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub server: String,
    pub system_prompt: Option<String>,
    /// The server's messages, without a system message.
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub stop: Vec<String>,
    pub tools: Vec<ToolDef>,
    pub tool_choice: ToolChoice,
    /// `includeContext` other than `none`.
    pub wants_context: bool,
}

/// Reads the request. `max_tokens` is the cap already applied; `format` renders earlier tool
/// calls of the server's conversation the way the model is taught to write them.
pub fn prepare(
    server: &str,
    params: &CreateMessageRequestParams,
    max_tokens: u32,
    format: ToolFormat,
) -> Result<Prepared, SamplingError> {
    if params.messages.is_empty() {
        return Err(SamplingError::Empty {
            server: server.to_string(),
        });
    }
    let mut messages = Vec::with_capacity(params.messages.len());
    for (i, message) in params.messages.iter().enumerate() {
        messages.extend(convert_message(server, i + 1, message, format)?);
    }
    let tool_choice = match params.tool_choice.as_ref().and_then(|c| c.mode.clone()) {
        Some(ToolChoiceMode::Required) => ToolChoice::Required,
        Some(ToolChoiceMode::None) => ToolChoice::None,
        _ => ToolChoice::Auto,
    };
    let tools = params
        .tools
        .iter()
        .flatten()
        .map(|t| ToolDef {
            name: t.name.to_string(),
            description: t.description.as_ref().map(|d| d.to_string()),
            input_schema: Value::Object((*t.input_schema).clone()),
            annotations: None,
        })
        .collect();
    Ok(Prepared {
        server: server.to_string(),
        system_prompt: params.system_prompt.clone(),
        messages,
        max_tokens,
        temperature: params.temperature,
        stop: params.stop_sequences.clone().unwrap_or_default(),
        tools,
        tool_choice,
        wants_context: matches!(
            params.include_context,
            Some(ContextInclusion::ThisServer | ContextInclusion::AllServers)
        ),
    })
}

fn convert_message(
    server: &str,
    index: usize,
    message: &SamplingMessage,
    format: ToolFormat,
) -> Result<Vec<Message>, SamplingError> {
    let role = match message.role {
        Role::User => LlmRole::User,
        Role::Assistant => LlmRole::Assistant,
    };
    let unsupported = |what| SamplingError::Unsupported {
        server: server.to_string(),
        index,
        what,
    };
    let mut out: Vec<Message> = Vec::new();
    let mut push = |role: LlmRole, text: String| match out.last_mut() {
        // Consecutive blocks of one role form one turn.
        Some(last) if last.role == role => {
            last.content.push('\n');
            last.content.push_str(&text);
        }
        _ => out.push(Message::new(role, text)),
    };
    for block in message.content.clone().into_vec() {
        match block {
            SamplingMessageContentBlock::Text(t) => push(role, t.text),
            SamplingMessageContentBlock::Image(_) => return Err(unsupported("an image")),
            SamplingMessageContentBlock::Audio(_) => return Err(unsupported("audio")),
            SamplingMessageContentBlock::ToolUse(call) => push(
                LlmRole::Assistant,
                example_call(format, &call.name, &Value::Object(call.input)),
            ),
            SamplingMessageContentBlock::ToolResult(result) => {
                let text = result
                    .content
                    .iter()
                    .map(|c| match serde_json::to_value(c) {
                        Ok(v) if v.get("type").and_then(Value::as_str) == Some("text") => v
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        Ok(v) => format!(
                            "[{} content omitted]",
                            v.get("type").and_then(Value::as_str).unwrap_or("non-text")
                        ),
                        Err(_) => "[unreadable content]".to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                push(LlmRole::Tool, text)
            }
            #[allow(unreachable_patterns)]
            _ => return Err(unsupported("a content type rkmcp does not know")),
        }
    }
    Ok(out)
}

/// What the model produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Text(String),
    /// Calls of the request's tools (the server runs them and asks again).
    ToolUse(Vec<(String, String, serde_json::Map<String, Value>)>),
}

/// The result the server gets.
pub fn result(answer: Answer, finish: FinishReason, model: &str) -> CreateMessageResult {
    let (message, stop) = match answer {
        Answer::Text(text) => (
            SamplingMessage::assistant_text(text),
            match finish {
                FinishReason::MaxTokens | FinishReason::ContextFull => {
                    CreateMessageResult::STOP_REASON_END_MAX_TOKEN
                }
                FinishReason::Stop => CreateMessageResult::STOP_REASON_END_SEQUENCE,
                FinishReason::EndOfTurn | FinishReason::Aborted => {
                    CreateMessageResult::STOP_REASON_END_TURN
                }
            },
        ),
        Answer::ToolUse(calls) => (
            SamplingMessage::new_multiple(
                Role::Assistant,
                calls
                    .into_iter()
                    .map(|(id, name, input)| SamplingMessageContentBlock::tool_use(id, name, input))
                    .collect(),
            ),
            CreateMessageResult::STOP_REASON_TOOL_USE,
        ),
    };
    let mut result = CreateMessageResult::new(message, model.to_string());
    result.stop_reason = Some(stop.to_string());
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> CreateMessageRequestParams {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_wire_request_becomes_a_separate_conversation() {
        let p = params(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Name a colour."}},
                {"role": "assistant", "content": {"type": "text", "text": "Red."}},
                {"role": "user", "content": [{"type": "text", "text": "Another"}, {"type": "text", "text": "please."}]}
            ],
            "systemPrompt": "Answer in one word.",
            "maxTokens": 40,
            "temperature": 0.2,
            "stopSequences": ["\n\n"],
            "includeContext": "thisServer"
        }));
        let prepared = prepare("everything", &p, 40, ToolFormat::Hermes).unwrap();
        assert_eq!(
            prepared.messages,
            vec![
                Message::user("Name a colour."),
                Message::assistant("Red."),
                Message::user("Another\nplease.")
            ]
        );
        assert_eq!(
            prepared.system_prompt.as_deref(),
            Some("Answer in one word.")
        );
        assert_eq!(prepared.temperature, Some(0.2));
        assert_eq!(prepared.stop, ["\n\n"]);
        assert!(prepared.wants_context);
        assert!(prepared.tools.is_empty());
    }

    #[test]
    fn images_and_audio_are_refused_naming_the_message() {
        let p = params(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}},
                {"role": "user", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}
            ],
            "maxTokens": 10
        }));
        let err = prepare("pics", &p, 10, ToolFormat::Hermes).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sampling request from server `pics`: message 2 contains an image; the local model reads text only"
        );
        assert_eq!(
            err.to_error_data().code,
            rmcp::model::ErrorCode::INVALID_PARAMS
        );
    }

    #[test]
    fn tools_and_earlier_tool_rounds_are_carried_over() {
        let p = params(json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}},
                {"role": "assistant", "content": {"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Paris"}}},
                {"role": "user", "content": {"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "18 C"}]}}
            ],
            "maxTokens": 50,
            "tools": [{"name": "weather", "description": "Weather now", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "toolChoice": {"mode": "required"}
        }));
        let prepared = prepare("w", &p, 50, ToolFormat::Hermes).unwrap();
        assert_eq!(prepared.tools.len(), 1);
        assert_eq!(prepared.tools[0].name, "weather");
        assert_eq!(prepared.tool_choice, ToolChoice::Required);
        assert_eq!(prepared.messages[1].role, LlmRole::Assistant);
        assert!(prepared.messages[1].content.contains("weather"));
        assert!(prepared.messages[1].content.contains("Paris"));
        assert_eq!(prepared.messages[2], Message::tool("18 C"));
    }

    #[test]
    fn results_carry_the_stop_reason() {
        let r = result(
            Answer::Text("Blue.".into()),
            FinishReason::EndOfTurn,
            "SmolLM2",
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["role"], "assistant");
        assert_eq!(v["content"]["text"], "Blue.");
        assert_eq!(v["stopReason"], "endTurn");
        assert_eq!(v["model"], "SmolLM2");
        let r = result(Answer::Text("Bl".into()), FinishReason::MaxTokens, "m");
        assert_eq!(r.stop_reason.as_deref(), Some("maxTokens"));
        let mut input = serde_json::Map::new();
        input.insert("city".into(), json!("Paris"));
        let r = result(
            Answer::ToolUse(vec![("call_1".into(), "weather".into(), input)]),
            FinishReason::EndOfTurn,
            "m",
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["stopReason"], "toolUse");
        assert_eq!(v["content"][0]["type"], "tool_use");
        assert_eq!(v["content"][0]["input"]["city"], "Paris");
    }
}
