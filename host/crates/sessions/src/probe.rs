//! The `server/discover` probe of `protocol = "auto"`, as a layer between a transport and rmcp.
//!
//! rmcp's auto lifecycle falls back to `initialize` on the same connection only when the probe
//! is answered with a JSON-RPC error it takes for "legacy server"; anything else ends the start.
//! Servers in the wild answer the probe in every way: an empty result (the conformance suite's
//! 2025 servers), a result of another shape, an error with a 2026-07-28 code, an answer with the
//! wrong id, or nothing at all. This layer turns each of those into the error rmcp falls back
//! on, and records why, so the session can say "server/discover not supported: <why>". What it
//! cannot mend in place (a closed connection, an HTTP error, a probe still unanswered over HTTP)
//! makes the start fail; the session then reconnects and sends `initialize` ([`super::negotiate`]).
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    ClientRequest, ErrorCode, ErrorData, JsonRpcMessage, ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::time::Instant;

use super::lock;

/// What the probe found; shared between the transport layer and the session that reads it.
#[derive(Debug, Default)]
struct State {
    /// The `server/discover` awaiting its answer.
    pending: Option<RequestId>,
    /// When the first `server/discover` went out.
    sent_at: Option<Instant>,
    /// A probe given up on: its late answer is dropped (rmcp would take it for a wrong answer to
    /// `initialize`).
    abandoned: Option<RequestId>,
    /// rmcp went on to `initialize` on this connection.
    initialize_sent: bool,
    /// Why `server/discover` did not count, once it did not.
    why_not: Option<String>,
}

/// One probe: made per connection attempt, read by the session after it.
#[derive(Clone)]
pub struct Probe {
    state: Arc<Mutex<State>>,
    /// How long the server may leave `server/discover` unanswered.
    bound: Duration,
    /// Answer for a silent server after `bound` (in-order pipes: stdio, plugins), rather than
    /// leave it to the session to reconnect (HTTP, whose client cannot send `initialize` while
    /// the probe's POST is still waiting).
    answer_silence: bool,
    /// The 2026-07-28-style versions rkmcp offered; a discover result must name one of them.
    offered: Vec<ProtocolVersion>,
}

impl Probe {
    pub fn new(bound: Duration, answer_silence: bool, offered: Vec<ProtocolVersion>) -> Probe {
        Probe {
            state: Arc::default(),
            bound,
            answer_silence,
            offered,
        }
    }

    /// Why `server/discover` did not count (`None` while it did, or was not answered yet).
    pub fn why_not(&self) -> Option<String> {
        lock(&self.state).why_not.clone()
    }

    /// Whether rmcp went on to `initialize` on this connection (the probe is over).
    pub fn initialize_sent(&self) -> bool {
        lock(&self.state).initialize_sent
    }

    /// Resolves once `server/discover` has gone unanswered for the bound; never when it was
    /// answered in time (or not sent).
    pub async fn silent_past_bound(&self) {
        loop {
            let (pending, sent_at) = {
                let state = lock(&self.state);
                (state.pending.is_some(), state.sent_at)
            };
            match sent_at {
                Some(at) if pending => {
                    if Instant::now() >= at + self.bound {
                        lock(&self.state)
                            .why_not
                            .get_or_insert_with(|| silence(self.bound));
                        return;
                    }
                    tokio::time::sleep_until(at + self.bound).await;
                }
                Some(_) => std::future::pending::<()>().await,
                // Not sent yet: look again shortly.
                None => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    fn on_send(&self, item: &TxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Request(request) = item else {
            return;
        };
        let mut state = lock(&self.state);
        match &request.request {
            ClientRequest::DiscoverRequest(_) => {
                // A `server/discover` after the probe was answered (a 2026-07-28 session's
                // health ping) is not the probe: left alone, the silence bound would already have
                // passed and this layer would answer it with a fake error.
                if state.sent_at.is_some() && state.pending.is_none() {
                    return;
                }
                state.pending = Some(request.id.clone());
                state.sent_at.get_or_insert_with(Instant::now);
            }
            ClientRequest::InitializeRequest(_) => {
                state.initialize_sent = true;
                // rmcp gave up on the probe itself (its own 10 s limit).
                if let Some(id) = state.pending.take() {
                    state.abandoned = Some(id);
                    state
                        .why_not
                        .get_or_insert_with(|| silence(Duration::from_secs(10)));
                }
            }
            _ => {}
        }
    }

    /// When the silence has lasted the bound and this layer answers for the server: the error
    /// rmcp falls back on. The probe's late answer will be dropped.
    fn answer_for_silence(&self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut state = lock(&self.state);
        let id = state.pending.take()?;
        state.abandoned = Some(id.clone());
        let why = silence(self.bound);
        state.why_not = Some(why.clone());
        Some(fallback_error(why, id))
    }

    /// The deadline of the probe in flight, when this layer answers for a silent server.
    fn deadline(&self) -> Option<Instant> {
        if !self.answer_silence {
            return None;
        }
        let state = lock(&self.state);
        state.pending.as_ref()?;
        state.sent_at.map(|at| at + self.bound)
    }

    /// Passes a message on, mends it into the error rmcp falls back on, or drops it (`None`).
    fn on_receive(
        &self,
        message: RxJsonRpcMessage<RoleClient>,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut state = lock(&self.state);
        let Some(pending) = state.pending.clone() else {
            let late = match &message {
                JsonRpcMessage::Response(r) => Some(&r.id),
                JsonRpcMessage::Error(e) => e.id.as_ref(),
                _ => None,
            };
            if late.is_some() && late == state.abandoned.as_ref() {
                tracing::debug!("dropping the late answer to server/discover");
                return None;
            }
            return Some(message);
        };
        // While the probe is out rmcp sends nothing else, so any answer is the probe's.
        let other_id = |id: &RequestId| {
            if same_id(&pending, id) {
                String::new()
            } else {
                format!(" (with id {id} where rkmcp sent {pending})")
            }
        };
        match message {
            JsonRpcMessage::Response(response) => {
                state.pending = None;
                let wrong_id = other_id(&response.id);
                if wrong_id.is_empty()
                    && let ServerResult::DiscoverResult(result) = &response.result
                    && result
                        .supported_versions
                        .iter()
                        .any(|v| self.offered.contains(v))
                {
                    return Some(JsonRpcMessage::Response(response));
                }
                let why = format!(
                    "it answered with {}{wrong_id}",
                    what_result(&response.result, &self.offered)
                );
                state.why_not = Some(why.clone());
                Some(fallback_error(why, pending))
            }
            JsonRpcMessage::Error(error) => {
                let data = &error.error;
                // A version rkmcp offers among those named: rmcp asks again with it.
                if data.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                    && supported_in(data).iter().any(|v| self.offered.contains(v))
                {
                    return Some(JsonRpcMessage::Error(error));
                }
                state.pending = None;
                let wrong_id = error.id.as_ref().map(other_id).unwrap_or_default();
                let why = match data.message.strip_prefix(HTTP_REFUSAL) {
                    // rmcp's HTTP client turns a 4xx to the probe into this error.
                    Some(http) => super::http::printable(http, 200),
                    None => format!(
                        "it answered with JSON-RPC error {}: {}{wrong_id}",
                        data.code.0,
                        super::http::printable(&data.message, 200)
                    ),
                };
                state.why_not = Some(why.clone());
                Some(fallback_error(why, pending))
            }
            other => Some(other),
        }
    }
}

/// How rmcp's streamable HTTP client words a 4xx answer to `server/discover` (as an error).
const HTTP_REFUSAL: &str = "server/discover rejected with ";

/// rmcp's own matching is crate-private: a number also matches its decimal string.
fn same_id(sent: &RequestId, answered: &RequestId) -> bool {
    sent == answered || sent.to_string() == answered.to_string()
}

pub(crate) fn silence(bound: Duration) -> String {
    format!("no answer within {}", humantime::format_duration(bound))
}

/// The versions an "unsupported protocol version" error names in `data.supported`.
fn supported_in(error: &ErrorData) -> Vec<ProtocolVersion> {
    error
        .data
        .as_ref()
        .and_then(|d| d.get("supported"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// A result that is not a usable discover result, in words.
fn what_result(result: &ServerResult, offered: &[ProtocolVersion]) -> String {
    match result {
        ServerResult::EmptyResult(_) => "an empty result".into(),
        ServerResult::DiscoverResult(r) => format!(
            "versions rkmcp does not offer there ({}; rkmcp offered {})",
            join(&r.supported_versions),
            join(offered)
        ),
        other => {
            let json = serde_json::to_string(other).unwrap_or_default();
            if json == "{}" {
                "an empty result".into()
            } else {
                format!(
                    "a result that is not a discover result: {}",
                    super::framing::shorten_to(json.as_bytes(), 120)
                )
            }
        }
    }
}

fn join(versions: &[ProtocolVersion]) -> String {
    if versions.is_empty() {
        return "none".into();
    }
    versions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error rmcp takes for "legacy server": its code is none of the 2026-07-28 rejections.
fn fallback_error(why: String, id: RequestId) -> RxJsonRpcMessage<RoleClient> {
    RxJsonRpcMessage::<RoleClient>::error(
        ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("server/discover not supported: {why}"),
            None,
        ),
        Some(id),
    )
}

/// The layer: passes everything through unchanged when there is no probe.
pub struct ProbeTransport<T> {
    inner: T,
    probe: Option<Probe>,
}

pub fn wrap<T>(inner: T, probe: Option<Probe>) -> ProbeTransport<T> {
    ProbeTransport { inner, probe }
}

impl<T: Transport<RoleClient> + 'static> Transport<RoleClient> for ProbeTransport<T> {
    type Error = T::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some(probe) = &self.probe {
            probe.on_send(&item);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let Some(probe) = self.probe.clone() else {
                return self.inner.receive().await;
            };
            let message = match probe.deadline() {
                // The inner transports' `receive` is cancel-safe (a partial line stays read).
                Some(deadline) => tokio::select! {
                    message = self.inner.receive() => message?,
                    _ = tokio::time::sleep_until(deadline) => match probe.answer_for_silence() {
                        Some(answer) => return Some(answer),
                        None => continue,
                    },
                },
                None => self.inner.receive().await?,
            };
            if let Some(message) = probe.on_receive(message) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{DiscoverRequest, DiscoverRequestParams, NumberOrString};

    fn probe() -> Probe {
        Probe::new(
            Duration::from_secs(1),
            true,
            vec![ProtocolVersion::V_2026_07_28],
        )
    }

    fn discover(probe: &Probe, id: i64) {
        let request = TxJsonRpcMessage::<RoleClient>::request(
            ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams::default())),
            NumberOrString::Number(id),
        );
        probe.on_send(&request);
    }

    fn received(v: serde_json::Value) -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_value(v).unwrap()
    }

    fn error_text(message: Option<RxJsonRpcMessage<RoleClient>>) -> (i32, String) {
        match message {
            Some(JsonRpcMessage::Error(e)) => (e.error.code.0, e.error.message.to_string()),
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn an_empty_result_becomes_the_error_rmcp_falls_back_on() {
        let p = probe();
        discover(&p, 0);
        let mended = p.on_receive(received(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
        ));
        let (code, text) = error_text(mended);
        assert_eq!(code, ErrorCode::METHOD_NOT_FOUND.0);
        assert!(text.contains("an empty result"), "{text}");
        assert_eq!(
            p.why_not().as_deref(),
            Some("it answered with an empty result")
        );
    }

    #[test]
    fn a_2026_rejection_code_and_a_wrong_id_still_fall_back() {
        let p = probe();
        discover(&p, 0);
        let mended = p.on_receive(received(serde_json::json!({
            "jsonrpc": "2.0", "id": 7,
            "error": {"code": -32021, "message": "missing capability"}
        })));
        let (code, _) = error_text(mended);
        assert_eq!(code, ErrorCode::METHOD_NOT_FOUND.0);
        let why = p.why_not().unwrap();
        assert!(why.contains("-32021") && why.contains("id 7"), "{why}");
    }

    #[test]
    fn a_later_discover_is_not_taken_for_the_probe() {
        let p = probe();
        discover(&p, 0);
        let answer = received(serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {
            "resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {}, "ttlMs": 0, "cacheScope": "public"}}));
        assert!(p.on_receive(answer).is_some());
        assert_eq!(
            p.why_not(),
            None,
            "a well-formed discover result is accepted"
        );
        // The session's health ping, long after the bound.
        discover(&p, 5);
        assert!(p.deadline().is_none());
        assert!(p.answer_for_silence().is_none());
        assert_eq!(p.why_not(), None);
    }

    #[test]
    fn a_late_answer_after_silence_is_dropped() {
        let p = probe();
        discover(&p, 0);
        assert!(p.answer_for_silence().is_some());
        assert!(p.why_not().unwrap().starts_with("no answer within 1s"));
        let late = p.on_receive(received(
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
        ));
        assert!(late.is_none());
    }
}
