//! The local model behind the gateway: the `local_model_generate` tool, and sampling for servers
//! behind the gateway when the connected client cannot sample.
//!
//! The model is loaded on first use (the gateway starts in the time its servers take, not the
//! model's), once; a model that fails to load keeps failing with the same message. The backend
//! runs one generation at a time: a request waits its turn for at most `[serve]
//! local_model_wait` seconds and is then refused as busy.
#![allow(deprecated)] // sampling is deprecated by SEP-2577, but servers still use it.
use std::sync::Arc;
use std::time::Duration;

use rkmcp_llm::{GenerateRequest, LlmError, Message, ModelConfig, SharedBackend};
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, CreateMessageResult, Tool,
};
use serde_json::{Map, Value, json};

use rkmcp_chat::sampling::{Sampler, SamplingPolicy};
use rkmcp_chat::settings::ChatSettings;

/// The tool's name.
pub const TOOL_NAME: &str = "local_model_generate";

/// The server name the local model's tool has in approval rules (`rkmcp/local_model_generate`).
pub const SERVER_NAME: &str = "rkmcp";

struct Loaded {
    backend: SharedBackend,
    sampler: Arc<Sampler>,
}

pub struct LocalModel {
    config: ModelConfig,
    settings: ChatSettings,
    /// Handed to the sampler when the model loads (once): the policy holds the servers' sampling
    /// budgets, which a copy would double.
    sampling: std::sync::Mutex<Option<SamplingPolicy>>,
    wait: Duration,
    loaded: tokio::sync::OnceCell<Result<Loaded, String>>,
}

/// The tool's arguments, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateArgs {
    pub prompt: String,
    pub system: Option<String>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

impl GenerateArgs {
    /// Err: which argument is wrong and why (sent back as a tool error).
    pub fn parse(args: &Map<String, Value>) -> Result<Self, String> {
        let prompt = match args.get("prompt") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => return Err("`prompt` is empty".into()),
            Some(other) => return Err(format!("`prompt` must be a string, not {other}")),
            None => return Err("`prompt` is required".into()),
        };
        let system = match args.get("system") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => return Err(format!("`system` must be a string, not {other}")),
        };
        let max_tokens = match args.get("max_tokens") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .filter(|n| (1..=8192).contains(n))
                    .map(|n| n as u32)
                    .ok_or_else(|| format!("`max_tokens` must be an integer 1..=8192, not {v}"))?,
            ),
        };
        let temperature = match args.get("temperature") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_f64()
                    .filter(|t| (0.0..=2.0).contains(t))
                    .map(|t| t as f32)
                    .ok_or_else(|| format!("`temperature` must be a number 0..=2, not {v}"))?,
            ),
        };
        Ok(GenerateArgs {
            prompt,
            system,
            max_tokens,
            temperature,
        })
    }
}

/// The tool as listed.
pub fn tool() -> Tool {
    let value = json!({
        "name": TOOL_NAME,
        "title": "Generate text with the local model",
        "description": "Runs the local LLM rkmcp was configured with (one generation at a time) and returns its answer.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The user message."},
                "system": {"type": "string", "description": "An optional system prompt."},
                "max_tokens": {"type": "integer", "minimum": 1, "maximum": 8192, "description": "Most tokens to generate."},
                "temperature": {"type": "number", "minimum": 0, "maximum": 2, "description": "Sampling temperature; 0 is greedy."}
            },
            "required": ["prompt"],
            "additionalProperties": false
        },
        "annotations": {"readOnlyHint": true, "openWorldHint": false}
    });
    // The JSON above is a valid tool; a failure here would be a bug caught by the unit test.
    serde_json::from_value(value).unwrap_or_else(|_| Tool::default())
}

impl LocalModel {
    pub fn new(
        config: ModelConfig,
        settings: ChatSettings,
        sampling: SamplingPolicy,
        wait: Duration,
    ) -> Self {
        LocalModel {
            config,
            settings,
            sampling: std::sync::Mutex::new(Some(sampling)),
            wait,
            loaded: tokio::sync::OnceCell::new(),
        }
    }

    async fn loaded(&self) -> Result<&Loaded, String> {
        let loaded = self
            .loaded
            .get_or_init(|| async {
                let backend = SharedBackend::open(self.config.clone())
                    .await
                    .map_err(|e| format!("the local model could not be loaded: {e}"))?;
                tracing::info!(model = %backend.info().model.display(), "local model loaded");
                let policy = self
                    .sampling
                    .lock()
                    .ok()
                    .and_then(|mut p| p.take())
                    .ok_or_else(|| {
                        "the local model's sampling policy was already used".to_string()
                    })?;
                // Servers behind the gateway sample without a person to ask: only the
                // `[sampling] auto_approve` servers may.
                let sampler = Arc::new(Sampler::new(
                    backend.clone(),
                    self.settings.clone(),
                    policy,
                    None,
                ));
                Ok(Loaded { backend, sampler })
            })
            .await;
        loaded.as_ref().map_err(Clone::clone)
    }

    /// Runs the tool. Bad arguments, a model that does not load and a busy model are tool
    /// errors the caller reads.
    pub async fn generate(&self, args: &Map<String, Value>) -> CallToolResult {
        let args = match GenerateArgs::parse(args) {
            Ok(a) => a,
            Err(e) => return tool_error(format!("{TOOL_NAME}: {e}")),
        };
        let loaded = match self.loaded().await {
            Ok(l) => l,
            Err(e) => return tool_error(e),
        };
        let mut messages = Vec::new();
        if let Some(system) = args.system {
            messages.push(Message::system(system));
        }
        messages.push(Message::user(args.prompt));
        let mut request = GenerateRequest::new(messages);
        request.reuse_cache = false;
        request.max_new_tokens = args.max_tokens.or(Some(self.config.max_new_tokens));
        request.temperature = args.temperature;
        match loaded
            .backend
            .generate_within(request, self.wait)
            .finish()
            .await
        {
            Ok(generation) => CallToolResult::success(vec![ContentBlock::text(
                generation.text.trim().to_string(),
            )]),
            Err(LlmError::Busy { waited }) => tool_error(format!(
                "the local model is busy with another generation (waited {}); try again",
                humantime::format_duration(waited)
            )),
            Err(e) => tool_error(format!("the local model failed: {e}")),
        }
    }

    /// `sampling/createMessage` of a server behind the gateway, on the local model, under the
    /// `[sampling]` rules.
    pub async fn sample(
        &self,
        server: &str,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let loaded = self.loaded().await.map_err(|e| {
            ErrorData::internal_error(format!("sampling for `{server}`: {e}"), None)
        })?;
        loaded
            .sampler
            .create_message(server, params)
            .await
            .map_err(|e| e.to_error_data())
    }
}

fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_tool_is_listed_with_its_schema() {
        let t = tool();
        assert_eq!(t.name, TOOL_NAME);
        assert_eq!(t.input_schema.get("required"), Some(&json!(["prompt"])));
        assert_eq!(
            t.annotations.and_then(|a| a.read_only_hint),
            Some(true),
            "read-only, so the default policy allows it"
        );
    }

    #[test]
    fn arguments_are_checked_with_clear_errors() {
        let ok = GenerateArgs::parse(&args(
            json!({"prompt": "hi", "system": "be brief", "max_tokens": 8, "temperature": 0}),
        ))
        .unwrap();
        assert_eq!(ok.max_tokens, Some(8));
        assert_eq!(ok.temperature, Some(0.0));
        assert_eq!(ok.system.as_deref(), Some("be brief"));
        for (bad, word) in [
            (json!({}), "required"),
            (json!({"prompt": "  "}), "empty"),
            (json!({"prompt": 3}), "string"),
            (json!({"prompt": "x", "max_tokens": -1}), "max_tokens"),
            (json!({"prompt": "x", "temperature": "hot"}), "temperature"),
        ] {
            let err = GenerateArgs::parse(&args(bad.clone())).unwrap_err();
            assert!(err.contains(word), "{bad}: {err}");
        }
    }
}
