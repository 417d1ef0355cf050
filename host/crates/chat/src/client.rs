//! How `chat` and `ask` answer the requests servers send (sampling, elicitation, roots): the
//! [`ClientRequests`] every session delegates to.
//!
//! - Sampling runs on the chat's own model through [`Sampler`] (set once the model is loaded);
//!   with a person at the terminal it is approved there, otherwise `[sampling] auto_approve`
//!   decides and everything else is refused with a message saying how to allow it.
//! - Elicitation forms are asked through a [`FormAsker`] (the terminal in `chat`); without one,
//!   [`NonInteractive`] declines with a notice, or accepts the defaults with `--accept-defaults`.
//! - Roots come from [`NonInteractive`], which holds them.
#![allow(deprecated)] // sampling and roots are deprecated by SEP-2577 but current servers use them.
use std::sync::{Arc, OnceLock};

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, Root,
};
use serde_json::Value;

use super::sampling::Sampler;
use rkmcp_sessions::client_requests::{ClientRequests, NonInteractive};
use rkmcp_sessions::elicitation::{Form, FormOutcome};
use rkmcp_sessions::url_wait::{URL_WAIT, UrlCompletions};

/// Asks a person for a form or a visit to a URL. Blocking (terminal prompts): called on a
/// blocking thread, one question at a time.
pub trait FormAsker: Send + Sync + 'static {
    fn fill(&self, server: &str, form: &Form) -> FormOutcome;
    fn open_url(&self, server: &str, message: &str, url: &str) -> FormOutcome;
    /// An accepted URL visit ended: the server confirmed it (`confirmed`), or no confirmation
    /// came within [`rkmcp_sessions::url_wait::URL_WAIT`].
    fn url_finished(&self, _server: &str, _url: &str, _confirmed: bool) {}
}

pub struct LocalClient {
    fallback: NonInteractive,
    forms: Option<Arc<dyn FormAsker>>,
    sampler: OnceLock<Arc<Sampler>>,
    /// One question at the terminal at a time, whichever server asks.
    asking: Arc<tokio::sync::Mutex<()>>,
    /// Accepted URL visits waiting for `notifications/elicitation/complete`.
    urls: UrlCompletions,
}

impl LocalClient {
    /// `forms`: `None` where nobody can answer (`ask`, no terminal).
    pub fn new(fallback: NonInteractive, forms: Option<Arc<dyn FormAsker>>) -> Self {
        Self {
            fallback,
            forms,
            sampler: OnceLock::new(),
            asking: Arc::default(),
            urls: UrlCompletions::default(),
        }
    }

    /// Serves sampling from now on (the model loads after the servers start).
    pub fn set_sampler(&self, sampler: Arc<Sampler>) {
        let _ = self.sampler.set(sampler);
    }
}

fn outcome_to_result(outcome: FormOutcome) -> ElicitResult {
    match outcome {
        FormOutcome::Accept(content) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
        }
        FormOutcome::Decline => ElicitResult::new(ElicitationAction::Decline),
        FormOutcome::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

#[async_trait::async_trait]
impl ClientRequests for LocalClient {
    fn capabilities(&self) -> ClientCapabilities {
        // Sampling with tools and with context (includeContext) is served, see `sampling`.
        serde_json::from_value(serde_json::json!({
            "roots": { "listChanged": true },
            "sampling": { "tools": {}, "context": {} },
            "elicitation": { "form": {}, "url": {} },
            "extensions": { (rkmcp_sessions::tasks::TASKS_EXTENSION): {} },
        }))
        .unwrap_or_default()
    }

    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(sampler) = self.sampler.get() else {
            // No model in this command (`tools call`), or not loaded yet.
            return self.fallback.create_message(server, params).await;
        };
        let _turn = self.asking.lock().await;
        sampler.create_message(server, &params).await.map_err(|e| {
            tracing::info!("{e}");
            e.to_error_data()
        })
    }

    async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(forms) = self.forms.clone() else {
            return self.fallback.elicit(server, params).await;
        };
        let server = server.to_string();
        let _turn = self.asking.lock().await;
        let mut visit = None;
        let ask = match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
                let form = Form::from_schema(&message, &schema).map_err(|e| {
                    ErrorData::invalid_params(
                        format!("elicitation from server `{server}`: {e}"),
                        None,
                    )
                })?;
                let (forms, server) = (forms.clone(), server.clone());
                tokio::task::spawn_blocking(move || forms.fill(&server, &form))
            }
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => {
                visit = Some((url.clone(), elicitation_id));
                let (forms, server) = (forms.clone(), server.clone());
                tokio::task::spawn_blocking(move || forms.open_url(&server, &message, &url))
            }
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        let outcome = ask.await.unwrap_or(FormOutcome::Cancel);
        if let (FormOutcome::Accept(_), Some((url, id))) = (&outcome, visit) {
            // Registered before the accept goes back: the server may confirm at once.
            let done = self.urls.expect(&server, &id);
            let urls = self.urls.clone();
            tokio::spawn(async move {
                let confirmed = matches!(tokio::time::timeout(URL_WAIT, done).await, Ok(Ok(())));
                if !confirmed {
                    urls.forget(&server, &id);
                }
                tokio::task::spawn_blocking(move || forms.url_finished(&server, &url, confirmed));
            });
        }
        Ok(outcome_to_result(outcome))
    }

    fn roots(&self) -> Vec<Root> {
        self.fallback.roots()
    }

    fn notification(&self, server: &str, method: &str, params: Option<&Value>) {
        self.urls.notified(server, method, params);
    }
}
