//! A layer around every server transport (stdio, HTTP, plugin), between it and rmcp:
//!
//! - records every message both ways in the audit log, when one is configured, marking sampling
//!   and elicitation requests and the answers to them;
//! - bounds the log and progress notifications waiting to be handled ([`super::flood`]);
//! - decodes `tools/list` results tool by tool when rmcp could not read them whole
//!   ([`super::decode`]), so one bad tool does not cost the server its whole list.
//!
//! It needs to know which request an answer belongs to, so it remembers the method of each
//! request until its answer (or its cancellation) passes.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::RoleClient;
use rmcp::model::{
    ClientNotification, GetExtensions, JsonRpcMessage, RequestId, ServerNotification,
    ServerRequest, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::flood::{Admit, NotificationBudget};
use super::lock;
use rkmcp_audit::{AuditLog, Direction};

pub struct Tap<T> {
    inner: T,
    server: String,
    /// Our requests awaiting an answer: id → method.
    ours: Arc<Mutex<HashMap<RequestId, String>>>,
    /// The server's requests awaiting our answer: id → audit topic.
    theirs: Arc<Mutex<HashMap<RequestId, &'static str>>>,
    budget: NotificationBudget,
    audit: Option<Arc<AuditLog>>,
}

/// Wraps `inner` for server `server`.
pub fn wrap<T>(inner: T, server: &str, audit: Option<Arc<AuditLog>>) -> Tap<T> {
    Tap {
        inner,
        server: server.to_string(),
        ours: Arc::default(),
        theirs: Arc::default(),
        budget: NotificationBudget::new(server, super::flood::DEFAULT_LIMIT),
        audit,
    }
}

/// Sampling and elicitation are recorded under their own kind.
fn topic_of(request: &ServerRequest) -> Option<&'static str> {
    match request {
        ServerRequest::CreateMessageRequest(_) => Some("sampling"),
        ServerRequest::ElicitRequest(_) => Some("elicitation"),
        _ => None,
    }
}

impl<T: Transport<RoleClient> + 'static> Transport<RoleClient> for Tap<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut topic = None;
        match &item {
            JsonRpcMessage::Request(r) => {
                lock(&self.ours).insert(r.id.clone(), r.request.method().to_string());
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    lock(&self.ours).remove(id);
                }
            }
            JsonRpcMessage::Response(r) => {
                topic = lock(&self.theirs).remove(&r.id);
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    topic = lock(&self.theirs).remove(id);
                }
            }
        }
        if let Some(audit) = &self.audit {
            let topic = topic.map(|t| format!("{t}_answer"));
            audit.message(&self.server, Direction::ToServer, topic.as_deref(), &item);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let mut message = self.inner.receive().await?;
            let topic = match &message {
                JsonRpcMessage::Request(r) => topic_of(&r.request).map(|t| {
                    lock(&self.theirs).insert(r.id.clone(), t);
                    format!("{t}_request")
                }),
                _ => None,
            };
            // Recorded as received, before anything below changes it.
            if let Some(audit) = &self.audit {
                audit.message(
                    &self.server,
                    Direction::FromServer,
                    topic.as_deref(),
                    &message,
                );
            }
            match &mut message {
                JsonRpcMessage::Response(r) => {
                    let method = lock(&self.ours).remove(&r.id);
                    if method.as_deref() == Some("tools/list") {
                        self.read_tools_leniently(&mut r.result);
                    }
                }
                JsonRpcMessage::Error(e) => {
                    if let Some(id) = &e.id {
                        lock(&self.ours).remove(id);
                    }
                }
                JsonRpcMessage::Notification(n)
                    if matches!(
                        n.notification,
                        ServerNotification::LoggingMessageNotification(_)
                            | ServerNotification::ProgressNotification(_)
                    ) =>
                {
                    match self.budget.admit(Instant::now()) {
                        Admit::Pass(ticket) => {
                            n.notification.extensions_mut().insert(ticket);
                        }
                        Admit::Drop { notice } => {
                            if let Some(notice) = notice {
                                tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, "{notice}");
                            }
                            continue;
                        }
                    }
                }
                _ => {}
            }
            return Some(message);
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(summary) = self.budget.summary() {
            tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, "{summary}");
        }
        self.inner.close().await
    }
}

impl<T> Tap<T> {
    /// rmcp reads a tool list it cannot decode as some other result (a custom one); read it
    /// tool by tool instead.
    fn read_tools_leniently(&self, result: &mut ServerResult) {
        if matches!(result, ServerResult::ListToolsResult(_)) {
            return;
        }
        let value = match &*result {
            ServerResult::CustomResult(custom) => custom.0.clone(),
            other => serde_json::to_value(other).unwrap_or_default(),
        };
        match super::decode::tools_result(&value) {
            Ok((tools, dropped)) => {
                for tool in &dropped {
                    tracing::warn!(
                        target: rkmcp_term_safe::NOTICE_TARGET,
                        "server `{}`: tool `{}` left out: {}",
                        self.server,
                        tool.name,
                        tool.reason
                    );
                }
                *result = ServerResult::ListToolsResult(tools);
            }
            Err(reason) => {
                tracing::warn!(
                    target: rkmcp_term_safe::NOTICE_TARGET,
                    "server `{}` answered `tools/list` with something else: {reason}",
                    self.server
                );
            }
        }
    }
}
