//! `sampling/createMessage` served by the local model.
//!
//! Data flows: [`policy`] (may this server sample, and must the user be asked?) → [`request`]
//! (the server's messages, limits and tools as a generation) → the same prompt, grammar and
//! detector path the chat uses ([`crate::prompt`], [`crate::detect`]) → the user sees
//! the answer (when asked) → [`request::result`] back to the server.
//!
//! A sampling generation is separate from the user's conversation: it gets its own messages, it
//! does not reuse the KV cache, and nothing of it is added to the chat history. The backend runs
//! one generation at a time: a request waits for the user's generation for at most
//! `[sampling] wait`, but never the reverse — a user's turn that needs the model stops a sampling
//! generation (the server gets an error saying so). Each server is held to a budget of requests
//! and tokens per minute ([`budget`]), so approving it once does not hand it the model.
//!
//! Commands without a model of their own (`tools call`, `resources read`, `prompts get`) serve
//! sampling too ([`Sampler::on_demand`]): the model is loaded by the first request the policy
//! lets through, so a command whose server never samples loads nothing, and a refused request
//! is refused before any loading.
#![allow(deprecated)] // sampling is deprecated by SEP-2577, but servers still use it.

pub mod budget;
pub mod policy;
pub mod request;

use std::sync::{Arc, Mutex};

use rkmcp_llm::{GenerateRequest, Message, ModelConfig, SharedBackend};
use rkmcp_tool_formats::DetectorEvent;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult};

use super::detect::ResponseDetector;
use super::prompt::{self, ToolPlan};
use super::settings::{ChatSettings, ToolDecision};
pub use policy::{Decision, SamplingPolicy, SamplingSettings};
pub use request::{Answer, Prepared, SamplingError};

/// The user's answer to "may server X have the model write this?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestChoice {
    Once,
    ForSession,
    Deny,
}

/// Whoever approves sampling: the terminal in `chat`.
#[async_trait::async_trait]
pub trait SamplingApprover: Send + Sync {
    /// Shows the request (server, messages, limits, tools) and asks whether to run it.
    async fn review_request(&self, request: &Prepared) -> RequestChoice;
    /// Shows the generated answer and asks whether to send it to the server.
    async fn review_answer(&self, server: &str, answer: &Answer) -> bool;
}

/// Context for `includeContext`: what rkmcp knows about a server (its instructions, tools and
/// resources), as text for the system prompt.
pub type ContextSource = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The model sampling runs on.
enum ModelSource {
    /// The chat's (or `ask`'s) own model, already loaded.
    Loaded(SharedBackend),
    /// Loaded by the first request that is let through; a failed load is tried again by the
    /// next request (its cause goes back to the server each time).
    OnDemand {
        config: Box<ModelConfig>,
        loaded: tokio::sync::OnceCell<SharedBackend>,
    },
}

/// Serves sampling requests for every server of one chat, `ask` or inspection command.
pub struct Sampler {
    model: ModelSource,
    settings: ChatSettings,
    policy: Mutex<SamplingPolicy>,
    /// `None`: nobody can be asked (`ask`, no terminal).
    approver: Option<Arc<dyn SamplingApprover>>,
    context: Option<ContextSource>,
}

impl Sampler {
    pub fn new(
        backend: SharedBackend,
        settings: ChatSettings,
        policy: SamplingPolicy,
        approver: Option<Arc<dyn SamplingApprover>>,
    ) -> Self {
        Self {
            model: ModelSource::Loaded(backend),
            settings,
            policy: Mutex::new(policy),
            approver,
            context: None,
        }
    }

    /// A sampler whose model is loaded from `config` when the first allowed request comes.
    pub fn on_demand(
        config: ModelConfig,
        settings: ChatSettings,
        policy: SamplingPolicy,
        approver: Option<Arc<dyn SamplingApprover>>,
    ) -> Self {
        Self {
            model: ModelSource::OnDemand {
                config: Box::new(config),
                loaded: tokio::sync::OnceCell::new(),
            },
            settings,
            policy: Mutex::new(policy),
            approver,
            context: None,
        }
    }

    /// The model, loading it first when it is loaded on demand.
    async fn backend(&self, server: &str) -> Result<&SharedBackend, SamplingError> {
        match &self.model {
            ModelSource::Loaded(backend) => Ok(backend),
            ModelSource::OnDemand { config, loaded } => loaded
                .get_or_try_init(|| async {
                    let backend = SharedBackend::open((**config).clone()).await?;
                    tracing::info!(
                        model = %backend.info().model.display(),
                        "local model loaded for sampling"
                    );
                    Ok(backend)
                })
                .await
                .map_err(|source| SamplingError::ModelLoad {
                    server: server.to_string(),
                    source,
                }),
        }
    }

    pub fn with_context(mut self, context: ContextSource) -> Self {
        self.context = Some(context);
        self
    }

    fn policy(&self) -> std::sync::MutexGuard<'_, SamplingPolicy> {
        self.policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves one request from `server`.
    pub async fn create_message(
        &self,
        server: &str,
        params: &CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, SamplingError> {
        let (decision, wait) = {
            let policy = self.policy();
            (
                policy.decide(server, self.approver.is_some()),
                policy.settings.wait,
            )
        };
        // A refusal needs no model: it is given before anything is loaded.
        let ask = match decision {
            Decision::Deny(message) => return Err(SamplingError::Denied(message)),
            Decision::Allow => None,
            Decision::Ask => self.approver.clone(),
        };
        // Charged before the user is asked: a server asking over and over is held to its budget
        // too, and the person is not asked more often than it allows.
        let admitted = self
            .policy()
            .admit(server, params.max_tokens)
            .map_err(SamplingError::Denied)?;
        let mut generated = 0;
        let result = self
            .run(
                server,
                params,
                admitted.max_tokens,
                wait,
                ask,
                &mut generated,
            )
            .await;
        self.policy().settle(&admitted, generated);
        result
    }

    /// The admitted request: the model, the user's approval when asked, the generation.
    async fn run(
        &self,
        server: &str,
        params: &CreateMessageRequestParams,
        max_tokens: u32,
        wait: std::time::Duration,
        ask: Option<Arc<dyn SamplingApprover>>,
        generated: &mut u32,
    ) -> Result<CreateMessageResult, SamplingError> {
        let backend = self.backend(server).await?;
        let format = ToolPlan::new(&self.settings, backend.info(), Vec::new()).format;
        let mut prepared = request::prepare(server, params, max_tokens, format)?;
        if prepared.wants_context
            && let Some(context) = self.context.as_ref().and_then(|c| c(server))
        {
            let base = prepared.system_prompt.take().unwrap_or_default();
            prepared.system_prompt = Some(format!("{base}\n\n{context}").trim().to_string());
        }
        if let Some(approver) = &ask {
            match approver.review_request(&prepared).await {
                RequestChoice::Once => {}
                RequestChoice::ForSession => self.policy().allow_for_session(server),
                RequestChoice::Deny => {
                    return Err(SamplingError::Denied(format!(
                        "sampling request from server `{server}`: the user declined it"
                    )));
                }
            }
        }
        let (answer, finish, tokens) = self.generate(backend, &prepared, wait).await?;
        *generated = tokens;
        if finish == rkmcp_llm::FinishReason::Aborted {
            return Err(SamplingError::Interrupted {
                server: server.to_string(),
            });
        }
        if let Some(approver) = &ask
            && !approver.review_answer(server, &answer).await
        {
            return Err(SamplingError::AnswerRejected {
                server: server.to_string(),
            });
        }
        let model = backend
            .info()
            .model
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "local".into());
        Ok(request::result(answer, finish, &model))
    }

    /// Runs the request through the chat's prompt, grammar and detector for its tools.
    async fn generate(
        &self,
        backend: &SharedBackend,
        prepared: &Prepared,
        wait: std::time::Duration,
    ) -> Result<(Answer, rkmcp_llm::FinishReason, u32), SamplingError> {
        let info = backend.info();
        let settings = ChatSettings {
            system_prompt: prepared.system_prompt.clone(),
            tool_choice: prepared.tool_choice,
            // A server's tools are the ones it asked for; no `answer_directly` round here.
            tool_decision: ToolDecision::Open,
            grammar: None,
            ..self.settings.clone()
        };
        let plan = ToolPlan::new(&settings, info, prepared.tools.clone());
        let offers_tools = plan.offers_tools(&settings);
        let native = info.capabilities.native_tools;
        let mut messages = vec![Message::system(prompt::system_prompt(
            &settings, &plan, native, false,
        ))];
        messages.extend(prepared.messages.iter().cloned());
        let mut request = GenerateRequest::new(messages);
        // Never continue the user's KV cache: this is another conversation.
        request.reuse_cache = false;
        request.max_new_tokens = Some(prepared.max_tokens);
        request.temperature = prepared.temperature;
        request.stop = prepared.stop.clone();
        let state = super::round::RoundState {
            round: 1,
            ..Default::default()
        };
        let round = super::round::plan_round(&settings, &plan, info.capabilities, &state);
        request.grammar = round.grammar;
        request.guide = round.guide;
        if native {
            request.tools_json = prompt::native_tools_json(&settings, &plan);
        }
        let server = prepared.server.clone();
        let generation = backend
            // The user's own turn comes first: it stops this generation if it needs the model.
            .generate_giving_way(request, wait)
            .finish()
            .await
            .map_err(|source| SamplingError::Model {
                server: server.clone(),
                source,
            })?;
        let tokens = generation.stats.generated_tokens;
        if !offers_tools {
            return Ok((Answer::Text(generation.text), generation.finish, tokens));
        }
        let opts = rkmcp_tool_formats::DetectorOptions::for_tools(&plan.tools);
        let mut detector = ResponseDetector::builtin(plan.format, &opts);
        let (mut events, _) = detector.feed(&generation.text).await;
        events.extend(detector.finish().await.0);
        let mut text = String::new();
        let mut calls = Vec::new();
        for event in events {
            match event {
                DetectorEvent::Text(t) => text.push_str(&t),
                DetectorEvent::ToolCall(call) => {
                    let input = match call.arguments {
                        serde_json::Value::Object(map) => map,
                        _ => serde_json::Map::new(),
                    };
                    calls.push((call.id, call.name, input));
                }
                // The model's reasoning is not part of its answer to the server.
                DetectorEvent::Reasoning(_) => {}
                // A call the model botched is given back as text: the server sees what it wrote.
                DetectorEvent::Malformed { raw, .. } => text.push_str(&raw),
            }
        }
        if calls.is_empty() {
            Ok((
                Answer::Text(text.trim().to_string()),
                generation.finish,
                tokens,
            ))
        } else {
            Ok((Answer::ToolUse(calls), generation.finish, tokens))
        }
    }
}
