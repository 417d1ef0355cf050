//! One request relayed to a server behind the gateway, with what happens while it runs: the
//! server's progress and log messages go to the client that asked (inside its request, so over
//! HTTP they travel on that request's stream), the server's sampling and elicitation requests are
//! asked of that client the same way, the client's cancellation cancels the server's request, and
//! the server's `request_timeout` bounds it.
#![allow(deprecated)] // logging and sampling are deprecated by SEP-2577 but current servers use them.
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult,
    CancelledNotificationParam, ClientRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, LoggingLevel, LoggingMessageNotificationParam,
    ProgressToken, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{ErrorData, Peer, RoleClient, RoleServer};
use tokio::sync::{mpsc, oneshot};

use super::log_floor::LogFloor;
use rkmcp_sessions::{Session, SessionEvent};

/// A request of a server, to be asked of the client whose call it is serving.
pub enum Ask {
    Sampling(
        CreateMessageRequestParams,
        oneshot::Sender<Result<CreateMessageResult, ErrorData>>,
    ),
    Elicitation(
        ElicitRequestParams,
        oneshot::Sender<Result<ElicitResult, ErrorData>>,
    ),
}

/// One call in flight: its number, the client connection it serves, and where the server's
/// questions for it go.
struct CallSlot {
    id: u64,
    connection: u64,
    asks: mpsc::Sender<Ask>,
}

/// Whose call a server's request belongs to.
pub enum CallTarget {
    /// No call to the server is in flight.
    NoCall,
    /// The newest call to the server; every call in flight to it is this connection's.
    Call {
        asks: mpsc::Sender<Ask>,
        connection: u64,
    },
    /// Calls of more than one client are in flight to the server. A server's request carries
    /// nothing that ties it to one of them (over stdio least of all), so it goes to none: one
    /// client's sampling prompt or form must never be shown to another.
    SeveralClients,
}

/// The calls in flight per server.
#[derive(Default)]
pub struct InFlight {
    calls: Mutex<HashMap<String, Vec<CallSlot>>>,
    next: AtomicU64,
}

impl InFlight {
    fn register(&self, server: &str, connection: u64) -> (u64, mpsc::Receiver<Ask>) {
        let (tx, rx) = mpsc::channel(4);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(server.to_string())
            .or_default()
            .push(CallSlot {
                id,
                connection,
                asks: tx,
            });
        (id, rx)
    }

    fn unregister(&self, server: &str, id: u64) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(list) = calls.get_mut(server) {
            list.retain(|slot| slot.id != id);
            if list.is_empty() {
                calls.remove(server);
            }
        }
    }

    /// Where a request of `server` goes ([`CallTarget`]).
    pub fn target(&self, server: &str) -> CallTarget {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        let Some(newest) = calls.get(server).and_then(|l| l.last()) else {
            return CallTarget::NoCall;
        };
        if calls[server]
            .iter()
            .any(|slot| slot.connection != newest.connection)
        {
            return CallTarget::SeveralClients;
        }
        CallTarget::Call {
            asks: newest.asks.clone(),
            connection: newest.connection,
        }
    }
}

/// The client connection a relayed request serves, and the calls in flight it joins.
#[derive(Clone, Copy)]
pub struct Caller<'a> {
    pub inflight: &'a InFlight,
    pub connection: u64,
}

/// Unregisters a call however its future ends (also when dropped on cancellation).
struct Registration<'a> {
    inflight: &'a InFlight,
    server: String,
    id: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.inflight.unregister(&self.server, self.id);
    }
}

/// Sends one `tools/call` to a server and returns the progress token it went out with, and the
/// call's answer to await. rmcp gives every request its own progress token, whatever the caller
/// put in `_meta`, so the token that the server's progress will carry is known only once the
/// request is sent. Dropping the answer before it arrives cancels the server's request (as
/// rmcp's own `call_tool_once` does).
pub async fn send_tool_call(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
) -> Result<
    (
        ProgressToken,
        impl Future<Output = Result<CallToolResponse, rmcp::ServiceError>> + use<>,
    ),
    rmcp::ServiceError,
> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await?;
    let token = handle.progress_token.clone();
    let mut guard = CancelOnDrop::new(
        peer.clone(),
        handle.id.clone(),
        "cancelled by the gateway's client",
    );
    let answer = async move {
        let result = handle.await_response().await;
        guard.disarm();
        match result? {
            ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
            ServerResult::InputRequiredResult(result) => {
                Ok(CallToolResponse::InputRequired(result))
            }
            ServerResult::CreateTaskResult(result) => Ok(CallToolResponse::Task(result)),
            // rmcp reads a result without content (`{}`) as an empty result.
            ServerResult::EmptyResult(_) => Ok(CallToolResponse::Complete(
                CallToolResult::success(Vec::new()),
            )),
            _ => Err(rmcp::ServiceError::UnexpectedResponse),
        }
    };
    Ok((token, answer))
}

/// A peer that can be told a request it was sent is abandoned: the servers behind the gateway
/// (it is their client) and the gateway's clients (it is their server). rmcp's two `Peer` roles
/// share no trait for `notify_cancelled`.
pub trait Cancellable: Send + 'static {
    fn cancel(self, params: CancelledNotificationParam) -> impl Future<Output = ()> + Send;
}

impl Cancellable for Peer<RoleClient> {
    async fn cancel(self, params: CancelledNotificationParam) {
        let _ = self.notify_cancelled(params).await;
    }
}

impl Cancellable for Peer<RoleServer> {
    async fn cancel(self, params: CancelledNotificationParam) {
        let _ = self.notify_cancelled(params).await;
    }
}

/// Tells the peer a request is abandoned (`notifications/cancelled` with `reason`), unless its
/// answer came ([`CancelOnDrop::disarm`]).
pub struct CancelOnDrop<P: Cancellable> {
    peer: Option<P>,
    id: RequestId,
    reason: &'static str,
}

impl<P: Cancellable> CancelOnDrop<P> {
    pub fn new(peer: P, id: RequestId, reason: &'static str) -> Self {
        CancelOnDrop {
            peer: Some(peer),
            id,
            reason,
        }
    }

    pub fn disarm(&mut self) {
        self.peer = None;
    }
}

impl<P: Cancellable> Drop for CancelOnDrop<P> {
    fn drop(&mut self) {
        let Some(peer) = self.peer.take() else { return };
        let params =
            CancelledNotificationParam::new(Some(self.id.clone()), Some(self.reason.into()));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(peer.cancel(params));
        }
    }
}

/// Runs `request` against `session` for the client of `ctx`.
/// `logs`: which of the server's log messages meanwhile go to that client.
pub async fn relay<T>(
    session: &Session,
    ctx: &RequestContext<RoleServer>,
    caller: Caller<'_>,
    logs: LogFloor,
    what: &str,
    request: impl Future<Output = Result<T, rmcp::ServiceError>>,
) -> Result<T, ErrorData> {
    let events = session.subscribe();
    relay_with_events(session, events, ctx, caller, logs, what, None, request).await
}

/// [`relay`] for a request already sent: `events` must have been subscribed before it was,
/// or the server's first progress messages are missed. `progress`: (the token the request went
/// out with, see [`send_tool_call`]; the client's own token).
#[allow(clippy::too_many_arguments)] // each is one thing the relay needs; a struct would be used once
pub async fn relay_with_events<T>(
    session: &Session,
    mut events: tokio::sync::broadcast::Receiver<SessionEvent>,
    ctx: &RequestContext<RoleServer>,
    caller: Caller<'_>,
    logs: LogFloor,
    what: &str,
    progress: Option<(ProgressToken, ProgressToken)>,
    request: impl Future<Output = Result<T, rmcp::ServiceError>>,
) -> Result<T, ErrorData> {
    let server = session.name().to_string();
    let (id, mut asks) = caller.inflight.register(&server, caller.connection);
    let _registration = Registration {
        inflight: caller.inflight,
        server: server.clone(),
        id,
    };
    let timeout = session.config.request_timeout;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(request, deadline);
    // A closed event channel (the session went away) must not be polled again: it would be
    // ready forever.
    let mut events_open = true;
    let pass_on = Passer {
        ctx,
        caller,
        server: &server,
        logs,
        progress: progress.as_ref(),
    };
    loop {
        tokio::select! {
            // In this order: the client's cancellation and the deadline end the call even while
            // a server floods it with logs, and the server's messages before its answer go out
            // before the answer.
            biased;
            // Dropping `request` makes rmcp send notifications/cancelled to the server.
            _ = ctx.ct.cancelled() => {
                return Err(ErrorData::internal_error(
                    format!("{what}: cancelled by the client"),
                    None,
                ));
            }
            _ = &mut deadline => {
                return Err(ErrorData::internal_error(
                    format!(
                        "server `{server}`: {what} timed out after {} (its request_timeout)",
                        humantime::format_duration(timeout)
                    ),
                    None,
                ));
            }
            event = events.recv(), if events_open => match event {
                Ok(event) => pass_on.event(event).await,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => events_open = false,
                // Lagging behind drops some progress messages, not the call.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            },
            result = &mut request => {
                // rmcp hands each notification to a task of its own but the answer straight to
                // the caller, so the server's last log or progress message before its answer
                // may still be on its way to `events`: let those tasks run, then pass on what
                // arrived.
                tokio::task::yield_now().await;
                loop {
                    match events.try_recv() {
                        Ok(event) => pass_on.event(event).await,
                        Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => continue,
                        Err(_) => break,
                    }
                }
                return result.map_err(|e| service_error(&server, what, e));
            }
            Some(ask) = asks.recv() => answer(ctx, ask).await,
        }
    }
}

/// A server's log message as the gateway's clients get it: its logger under the server's name.
pub fn log_message(
    server: &str,
    level: LoggingLevel,
    logger: Option<String>,
    data: serde_json::Value,
) -> LoggingMessageNotificationParam {
    let mut params = LoggingMessageNotificationParam::new(level, data);
    params.logger = Some(match logger {
        Some(l) => format!("{server}/{l}"),
        None => server.to_string(),
    });
    params
}

/// Passes a server's progress and log messages during one request on to that request's client.
struct Passer<'a> {
    ctx: &'a RequestContext<RoleServer>,
    caller: Caller<'a>,
    server: &'a str,
    logs: LogFloor,
    /// (the token the request went out with, the client's own token)
    progress: Option<&'a (ProgressToken, ProgressToken)>,
}

impl Passer<'_> {
    fn only_caller(&self) -> bool {
        matches!(
            self.caller.inflight.target(self.server),
            CallTarget::Call { connection, .. } if connection == self.caller.connection
        )
    }

    async fn event(&self, event: SessionEvent) {
        match event {
            SessionEvent::Progress { mut params, .. } => {
                if let Some((ours, theirs)) = self.progress
                    && params.progress_token == *ours
                {
                    params.progress_token = theirs.clone();
                    let _ = self.ctx.peer.notify_progress(params).await;
                }
            }
            // A log message names no request: it is this call's only while every call in
            // flight to the server is this client's. Otherwise no client gets it (rkmcp's own
            // log has it, at debug level), rather than one client reading another's.
            SessionEvent::Log {
                level,
                logger,
                data,
                ..
            } if self.logs.passes(level) && self.only_caller() => {
                let params = log_message(self.server, level, logger, data);
                let _ = self.ctx.peer.notify_logging_message(params).await;
            }
            _ => {}
        }
    }
}

/// Asks the client of `ctx` what a server asked of the gateway. If the server cancels its
/// request meanwhile (its side of `reply` closes), the question to the client is dropped, which
/// tells the client with `notifications/cancelled` (see [`super::downstream::sample`]).
async fn answer(ctx: &RequestContext<RoleServer>, ask: Ask) {
    match ask {
        Ask::Sampling(params, mut reply) => {
            tokio::select! {
                result = super::downstream::sample(&ctx.peer, params) => {
                    let _ = reply.send(result.map_err(|e| service_error("", "sampling", e)));
                }
                _ = reply.closed() => {}
            }
        }
        Ask::Elicitation(params, mut reply) => {
            tokio::select! {
                result = super::downstream::elicit(&ctx.peer, params) => {
                    let _ = reply.send(result.map_err(|e| service_error("", "elicitation", e)));
                }
                _ = reply.closed() => {}
            }
        }
    }
}

/// A server's JSON-RPC error goes back with its code; a connection problem becomes an internal
/// error that names the server and says what to do.
pub fn service_error(server: &str, what: &str, err: rmcp::ServiceError) -> ErrorData {
    let who = if server.is_empty() {
        "the connected client".to_string()
    } else {
        format!("server `{server}`")
    };
    match err {
        rmcp::ServiceError::McpError(mut data) => {
            if !server.is_empty() && !data.message.contains(server) {
                data.message = format!("{who}: {}", data.message).into();
            }
            data
        }
        rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_) => {
            ErrorData::internal_error(
                format!(
                    "{who}: {what} failed: the connection closed (it exited or crashed); rkmcp \
                     restarts servers that go down — try again shortly"
                ),
                None,
            )
        }
        other => ErrorData::internal_error(format!("{who}: {what} failed: {other}"), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_keep_their_code_and_name_the_server() {
        let data = ErrorData::invalid_params("unknown resource", None);
        let mapped = service_error("fs", "reading", rmcp::ServiceError::McpError(data));
        assert_eq!(mapped.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert_eq!(mapped.message, "server `fs`: unknown resource");
        let closed = service_error("fs", "reading", rmcp::ServiceError::TransportClosed);
        assert_eq!(closed.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
        assert!(closed.message.contains("fs") && closed.message.contains("closed"));
    }

    #[test]
    fn a_servers_request_goes_to_its_clients_newest_call_and_never_across_clients() {
        let inflight = InFlight::default();
        assert!(matches!(inflight.target("s"), CallTarget::NoCall));
        let (a, _ra) = inflight.register("s", 1);
        let (b, _rb) = inflight.register("s", 1);
        assert!(matches!(
            inflight.target("s"),
            CallTarget::Call { connection: 1, .. }
        ));
        // A call of another client to another server changes nothing here.
        let (other, _ro) = inflight.register("t", 2);
        assert!(matches!(
            inflight.target("s"),
            CallTarget::Call { connection: 1, .. }
        ));
        // A second client's call to the same server: nobody can tell whose the request is.
        let (c, _rc) = inflight.register("s", 2);
        assert!(matches!(inflight.target("s"), CallTarget::SeveralClients));
        inflight.unregister("s", a);
        inflight.unregister("s", b);
        assert!(matches!(
            inflight.target("s"),
            CallTarget::Call { connection: 2, .. }
        ));
        inflight.unregister("s", c);
        inflight.unregister("t", other);
        assert!(matches!(inflight.target("s"), CallTarget::NoCall));
        assert!(inflight.calls.lock().unwrap().is_empty());
    }
}
