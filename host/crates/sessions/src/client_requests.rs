//! Requests a server sends to rkmcp: sampling (`sampling/createMessage`), elicitation
//! (`elicitation/create`) and roots (`roots/list`).
//!
//! Every session's rmcp handler delegates them to one [`ClientRequests`], chosen by the front
//! end: `chat` answers at the terminal, `ask` and the inspection commands use [`NonInteractive`],
//! the conformance client its own. The same implementation also answers the input requests of a
//! 2026-07-28 multi-round tool call (`input_required`), which rmcp routes through the handler.
//!
//! Sampling and roots are deprecated by SEP-2577 (2026-07-28), but current servers use them.
#![allow(deprecated)]
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorCode, Root,
};
use serde_json::{Map, Value};

use super::roots::Roots;

/// The JSON-RPC error code the spec uses for "the user rejected the request".
pub const USER_REJECTED: ErrorCode = ErrorCode(-1);

/// Answers the requests servers send to the client. Implementations must be cheap to share:
/// every session holds an `Arc` of the same one.
#[async_trait::async_trait]
pub trait ClientRequests: Send + Sync + 'static {
    /// The capabilities declared to servers (in `initialize`, or in every request's `_meta` on
    /// 2026-07-28). The default declares sampling, form and URL elicitation and roots with
    /// `listChanged`: servers then offer their features and get a clear answer either way.
    fn capabilities(&self) -> ClientCapabilities {
        default_capabilities()
    }

    /// `sampling/createMessage` from `server`.
    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData>;

    /// `elicitation/create` (form or URL mode) from `server`.
    async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData>;

    /// The current roots, for `roots/list`.
    fn roots(&self) -> Vec<Root>;

    /// A notification rmcp has no type for (e.g. `notifications/elicitation/complete`, which
    /// ends a URL-mode elicitation). Default: ignored.
    fn notification(&self, _server: &str, _method: &str, _params: Option<&Value>) {}

    /// Whether an answer under way may be dropped when the server cancels its request
    /// (`notifications/cancelled`). Only where dropping leaves nothing behind: a question at the
    /// terminal runs on a blocking thread that would keep reading the user's input. Default: no
    /// (the answer is finished and discarded).
    fn withdraws_on_cancel(&self) -> bool {
        false
    }

    /// The shared list behind [`ClientRequests::roots`], when it can be changed at run time
    /// (the chat's `/roots add|remove`). `None`: this implementation's roots are fixed.
    fn roots_handle(&self) -> Option<Roots> {
        None
    }
}

/// Capabilities for a client that serves sampling, elicitation (form and URL) and roots.
pub fn default_capabilities() -> ClientCapabilities {
    // rmcp's capability structs are non-exhaustive and its builder is a server-side feature;
    // the JSON form is the stable contract anyway.
    serde_json::from_value(serde_json::json!({
        "roots": { "listChanged": true },
        "sampling": {},
        "elicitation": { "form": {}, "url": {} },
        // Tool calls may become tasks (2026-07-28 tasks extension; see tasks.rs); skills are
        // listed and loaded on demand (SEP-2640; see skills.rs).
        "extensions": {
            (super::tasks::TASKS_EXTENSION): {},
            (super::skills::SKILLS_EXTENSION): {},
        },
    }))
    .unwrap_or_default()
}

/// Where nobody can answer (`ask`, scripts, no terminal): sampling is refused with a message
/// saying how to allow it; elicitation is declined with a notice, or accepted with the schema's
/// defaults when `accept_defaults` is set and every required field has one.
pub struct NonInteractive {
    roots: Roots,
    accept_defaults: bool,
    notice: Arc<dyn Fn(&str) + Send + Sync>,
}

impl NonInteractive {
    /// Notices go to stderr.
    pub fn new(roots: Roots, accept_defaults: bool) -> NonInteractive {
        NonInteractive {
            roots,
            accept_defaults,
            notice: Arc::new(|text| eprintln!("rkmcp: notice: {text}")),
        }
    }

    /// Sends notices somewhere else (a log, a test).
    pub fn with_notice(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.notice = Arc::new(notice);
        self
    }
}

#[async_trait::async_trait]
impl ClientRequests for NonInteractive {
    async fn create_message(
        &self,
        server: &str,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let message = sampling_denied_message(server);
        (self.notice)(&message);
        Err(ErrorData::new(USER_REJECTED, message, None))
    }

    async fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let server = terminal_safe(server);
        match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
                let message = terminal_safe(&message);
                if self.accept_defaults {
                    match defaults_for(&schema) {
                        Ok(content) => {
                            (self.notice)(&format!(
                                "server `{server}` asked: \"{message}\" — accepted with the form's defaults (--accept-defaults)"
                            ));
                            return Ok(ElicitResult::new(ElicitationAction::Accept)
                                .with_content(Value::Object(content)));
                        }
                        Err(missing) => (self.notice)(&format!(
                            "server `{server}` asked: \"{message}\" — declined: required field(s) without a default: {}",
                            missing.join(", ")
                        )),
                    }
                } else {
                    (self.notice)(&format!(
                        "server `{server}` asked: \"{message}\" — declined, nobody is at a terminal to answer (run `rkmcp chat`, or pass --accept-defaults to accept forms whose required fields all have defaults)"
                    ));
                }
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
            ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
                (self.notice)(&format!(
                    "server `{server}` asked you to open {} (\"{}\") — declined, nobody is at a terminal to answer",
                    terminal_safe(&url),
                    terminal_safe(&message)
                ));
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
            _ => {
                (self.notice)(&format!(
                    "server `{server}` asked for input in a mode rkmcp does not know — declined"
                ));
                Ok(ElicitResult::new(ElicitationAction::Decline))
            }
        }
    }

    fn roots(&self) -> Vec<Root> {
        self.roots.to_mcp()
    }

    fn roots_handle(&self) -> Option<Roots> {
        Some(self.roots.clone())
    }
}

/// Why a sampling request was refused and how to allow it.
pub fn sampling_denied_message(server: &str) -> String {
    let server = terminal_safe(server);
    format!(
        "sampling request from server `{server}` denied: nobody is at a terminal to approve it \
         (allow it with `[sampling] auto_approve = [\"{server}\"]` in the config, or use `rkmcp chat`)"
    )
}

/// The content an elicitation form would have if the user accepted every default: one entry per
/// property that has a `default`. `Err` lists the required properties without one.
pub fn defaults_for(schema: &Value) -> Result<Map<String, Value>, Vec<String>> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let content: Map<String, Value> = properties
        .iter()
        .filter_map(|(name, prop)| Some((name.clone(), prop.get("default")?.clone())))
        .collect();
    let missing: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|name| !content.contains_key(*name))
        .map(str::to_string)
        .collect();
    if missing.is_empty() {
        Ok(content)
    } else {
        Err(missing)
    }
}

/// Text from a server, made safe to print: control characters (escape sequences included)
/// are dropped, except newlines and tabs.
pub fn terminal_safe(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_cover_required_fields() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "Ada"},
                "age": {"type": "integer", "default": 36},
                "note": {"type": "string"}
            },
            "required": ["name", "age"]
        });
        let content = defaults_for(&schema).unwrap();
        assert_eq!(Value::Object(content), json!({"name": "Ada", "age": 36}));
    }

    #[test]
    fn a_required_field_without_default_is_named() {
        let schema = json!({
            "properties": {"email": {"type": "string"}, "x": {"type": "boolean", "default": true}},
            "required": ["email"]
        });
        assert_eq!(
            defaults_for(&schema).unwrap_err(),
            vec!["email".to_string()]
        );
    }

    #[test]
    fn control_sequences_are_stripped() {
        assert_eq!(terminal_safe("a\u{1b}[31mred\u{7}\nb"), "a[31mred\nb");
    }

    fn form(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": schema,
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn non_interactive_declines_unless_defaults_are_accepted() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "string", "default": "x"}}, "required": ["n"]});
        let declining = NonInteractive::new(Roots::default(), false).with_notice(|_| {});
        let result = declining.elicit("s", form(schema.clone())).await.unwrap();
        assert_eq!(result.action, ElicitationAction::Decline);
        let accepting = NonInteractive::new(Roots::default(), true).with_notice(|_| {});
        let result = accepting.elicit("s", form(schema)).await.unwrap();
        assert_eq!(result.action, ElicitationAction::Accept);
        assert_eq!(result.content, Some(json!({"n": "x"})));
    }

    #[tokio::test]
    async fn sampling_is_refused_with_how_to_allow_it() {
        let client = NonInteractive::new(Roots::default(), false).with_notice(|_| {});
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 10
        }))
        .unwrap();
        let err = client.create_message("srv", params).await.unwrap_err();
        assert_eq!(err.code, USER_REJECTED);
        assert!(err.message.contains("auto_approve"), "{}", err.message);
    }

    #[test]
    fn declared_capabilities() {
        let caps = serde_json::to_value(default_capabilities()).unwrap();
        assert_eq!(caps["roots"]["listChanged"], true);
        assert!(caps["sampling"].is_object());
        assert!(caps["elicitation"]["form"].is_object());
        assert!(caps["extensions"][super::super::tasks::TASKS_EXTENSION].is_object());
        assert!(caps["extensions"][super::super::skills::SKILLS_EXTENSION].is_object());
    }
}
