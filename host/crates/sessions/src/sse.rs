//! The legacy HTTP+SSE transport (MCP 2024-11-05) as an rmcp [`Transport`], so the session layer
//! treats it like stdio or streamable HTTP.
//!
//! The client GETs the SSE URL and waits for the server's `endpoint` event, which names where to
//! POST messages; answers arrive as `message` events on the same stream. rmcp has no client for
//! this transport (only for streamable HTTP). SSE is parsed by `sse-stream`, the crate rmcp itself
//! uses, not by hand.
//!
//! When the stream drops, the reader reconnects with backoff (sending `Last-Event-ID` if the server
//! gave ids). A server that hands out a *new* endpoint on reconnect has started a new session for
//! us, which it has not seen initialized: the transport replays the `initialize` request and the
//! `initialized` notification the session sent at start-up (and swallows the second answer), so
//! the session above never notices. A POST endpoint on another origin than the SSE URL is refused:
//! following it would send our messages, and our bearer token, to a host the user never named.
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderMap};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use sse_stream::{Sse, SseStream};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use url::Url;

use super::auth::BearerSource;

/// Reconnect attempts after the stream drops, before the session is given up.
const MAX_RECONNECTS: u32 = 6;
/// The first reconnect delay; doubled each attempt unless the server sent `retry:`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// How long a message waits for an endpoint while the stream is reconnecting.
const ENDPOINT_WAIT: Duration = Duration::from_secs(30);
/// The id of a replayed `initialize`, so its answer can be recognised and dropped.
const REPLAY_ID: &str = "rkmcp-sse-reinitialize";

/// What went wrong with the SSE transport. Every variant names the URL involved.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("cannot reach {url}: {}", super::http::describe_reqwest(source))]
    Connect {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the server needs a sign-in ({url} answered 401 Unauthorized)")]
    AuthRequired {
        url: String,
        challenge: Option<String>,
    },
    #[error("GET {url} answered HTTP {status}{body}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
        body: String,
    },
    #[error(
        "GET {url} did not answer with an event stream (Content-Type: {content_type}); is this the server's SSE URL (often ending in /sse)?"
    )]
    NotEventStream { url: String, content_type: String },
    #[error(
        "the SSE stream from {url} ended before the server sent its `endpoint` event (a legacy HTTP+SSE server sends it first); is this an MCP SSE URL?"
    )]
    NoEndpoint { url: String },
    #[error(
        "no `endpoint` event from {url} within {}; is this an MCP SSE URL?",
        humantime::format_duration(*waited)
    )]
    EndpointTimeout { url: String, waited: Duration },
    #[error("the SSE stream from {url} is broken: {source}")]
    Broken {
        url: String,
        #[source]
        source: sse_stream::Error,
    },
    #[error("the `endpoint` event from {url} is not a URL: `{data}`")]
    BadEndpoint { url: String, data: String },
    #[error(
        "refusing the POST endpoint {endpoint}: it is on another origin than the SSE URL {url} (messages and credentials stay with the server you configured)"
    )]
    CrossOrigin { url: String, endpoint: String },
    #[error("POST {endpoint} failed: {}", super::http::describe_reqwest(source))]
    Post {
        endpoint: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("POST {endpoint} answered HTTP {status}{body}")]
    PostStatus {
        endpoint: String,
        status: reqwest::StatusCode,
        body: String,
    },
    #[error("the connection to {url} is lost: {reason}")]
    Lost { url: String, reason: String },
    #[error("cannot encode a JSON-RPC message: {0}")]
    Encode(#[from] serde_json::Error),
    #[error(transparent)]
    Auth(#[from] super::auth::AuthFailure),
    #[error("{0}")]
    Setup(String),
}

/// Where messages go, as the reader last learned it.
#[derive(Debug, Clone)]
enum Endpoint {
    /// Reconnecting; no endpoint yet.
    Pending,
    Ready(Url),
    /// The stream is gone for good; the reason.
    Gone(String),
}

/// Everything the reader task and `send` share.
struct Shared {
    client: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    bearer: Option<Arc<dyn BearerSource>>,
    server: String,
    endpoint: watch::Sender<Endpoint>,
    /// The session's `initialize` request and `initialized` notification, for replay.
    handshake: Mutex<Handshake>,
}

#[derive(Default)]
struct Handshake {
    initialize: Option<serde_json::Value>,
    initialized: Option<serde_json::Value>,
}

pub struct SseTransport {
    shared: Arc<Shared>,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    cancel: CancellationToken,
}

/// How to open one legacy SSE connection.
pub struct SseOptions {
    pub server: String,
    pub client: reqwest::Client,
    pub url: Url,
    pub headers: HeaderMap,
    pub bearer: Option<Arc<dyn BearerSource>>,
    /// How long to wait for the `endpoint` event.
    pub endpoint_timeout: Duration,
}

type EventStream = BoxStream<'static, Result<Sse, sse_stream::Error>>;

impl SseTransport {
    /// Opens the stream and waits for the `endpoint` event.
    pub async fn connect(options: SseOptions) -> Result<SseTransport, SseError> {
        let (endpoint_tx, _) = watch::channel(Endpoint::Pending);
        let shared = Arc::new(Shared {
            client: options.client,
            url: options.url,
            headers: options.headers,
            bearer: options.bearer,
            server: options.server,
            endpoint: endpoint_tx,
            handshake: Mutex::new(Handshake::default()),
        });
        let mut stream = open_stream(&shared, None).await?;
        let mut last_id = None;
        let endpoint = tokio::time::timeout(
            options.endpoint_timeout,
            wait_for_endpoint(&shared, &mut stream, &mut last_id),
        )
        .await
        .map_err(|_| SseError::EndpointTimeout {
            url: shared.url.to_string(),
            waited: options.endpoint_timeout,
        })??;
        tracing::debug!(server = %shared.server, "legacy SSE endpoint: {endpoint}");
        shared.endpoint.send_replace(Endpoint::Ready(endpoint));
        let (tx, incoming) = mpsc::channel(64);
        let cancel = CancellationToken::new();
        tokio::spawn(read_loop(
            shared.clone(),
            stream,
            last_id,
            tx,
            cancel.clone(),
        ));
        Ok(SseTransport {
            shared,
            incoming,
            cancel,
        })
    }
}

fn challenge_of(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// GETs the SSE URL and checks that an event stream came back.
async fn open_stream(
    shared: &Shared,
    last_event_id: Option<&str>,
) -> Result<EventStream, SseError> {
    let url = &shared.url;
    let send = |token: Option<String>| {
        let mut request = shared
            .client
            .get(url.clone())
            .headers(shared.headers.clone())
            .header(ACCEPT, "text/event-stream")
            .header(CACHE_CONTROL, "no-cache");
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let connect_err = |source| SseError::Connect {
        url: url.to_string(),
        source,
    };
    let token = match &shared.bearer {
        Some(bearer) => bearer.token().await?,
        None => None,
    };
    let mut response = send(token.clone()).await.map_err(connect_err)?;
    if response.status() == reqwest::StatusCode::UNAUTHORIZED
        && let Some(bearer) = &shared.bearer
        && let Some(fresh) = bearer
            .rejected(token.as_deref(), challenge_of(&response).as_deref())
            .await?
    {
        response = send(Some(fresh)).await.map_err(connect_err)?;
    }
    let status = response.status();
    if status == reqwest::StatusCode::UNAUTHORIZED {
        let challenge = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        return Err(SseError::AuthRequired {
            url: url.to_string(),
            challenge,
        });
    }
    if !status.is_success() {
        return Err(SseError::Status {
            url: url.to_string(),
            status,
            body: body_excerpt(response).await,
        });
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !content_type
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
    {
        return Err(SseError::NotEventStream {
            url: url.to_string(),
            content_type: if content_type.is_empty() {
                "none".into()
            } else {
                content_type
            },
        });
    }
    Ok(SseStream::from_bytes_stream(response.bytes_stream()).boxed())
}

/// `: <first 200 characters of the body>`, stripped of control characters, or nothing.
pub(crate) async fn body_excerpt(response: reqwest::Response) -> String {
    let text = response.text().await.unwrap_or_default();
    let clean: String = text
        .chars()
        .filter(|c| !c.is_control() || *c == ' ')
        .take(200)
        .collect();
    if clean.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", clean.trim())
    }
}

/// Reads events until `endpoint`; resolves it against the SSE URL and checks its origin.
async fn wait_for_endpoint(
    shared: &Shared,
    stream: &mut EventStream,
    last_id: &mut Option<String>,
) -> Result<Url, SseError> {
    let url = &shared.url;
    while let Some(event) = stream.next().await {
        let event = event.map_err(|source| SseError::Broken {
            url: url.to_string(),
            source,
        })?;
        if event.id.is_some() {
            last_id.clone_from(&event.id);
        }
        match event.event.as_deref() {
            Some("endpoint") => {
                let data = event.data.unwrap_or_default();
                return resolve_endpoint(url, data.trim());
            }
            other => tracing::debug!(
                server = %shared.server,
                "ignoring SSE event {:?} before `endpoint`",
                other.unwrap_or("message")
            ),
        }
    }
    Err(SseError::NoEndpoint {
        url: url.to_string(),
    })
}

/// The POST URL from an `endpoint` event: relative to the SSE URL, same origin only.
pub fn resolve_endpoint(sse_url: &Url, data: &str) -> Result<Url, SseError> {
    let endpoint = sse_url.join(data).map_err(|_| SseError::BadEndpoint {
        url: sse_url.to_string(),
        data: data.chars().take(200).collect(),
    })?;
    let same_origin = endpoint.scheme() == sse_url.scheme()
        && endpoint.host_str().map(str::to_ascii_lowercase)
            == sse_url.host_str().map(str::to_ascii_lowercase)
        && endpoint.port_or_known_default() == sse_url.port_or_known_default();
    if !same_origin {
        return Err(SseError::CrossOrigin {
            url: sse_url.to_string(),
            endpoint: endpoint.to_string(),
        });
    }
    Ok(endpoint)
}

/// Delivers `message` events; on a dropped stream, reconnects and (for a new session) replays the
/// handshake. Ends when the transport is closed or reconnecting fails for good.
async fn read_loop(
    shared: Arc<Shared>,
    mut stream: EventStream,
    mut last_id: Option<String>,
    tx: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    cancel: CancellationToken,
) {
    let mut retry_hint: Option<Duration> = None;
    loop {
        let dropped = tokio::select! {
            _ = cancel.cancelled() => return,
            reason = pump(&shared, &mut stream, &mut last_id, &mut retry_hint, &tx) => reason,
        };
        let Some(reason) = dropped else {
            return; // the session side went away
        };
        tracing::warn!(server = %shared.server, "the SSE stream from {} dropped ({reason}); reconnecting", shared.url);
        let old_endpoint = match shared.endpoint.send_replace(Endpoint::Pending) {
            Endpoint::Ready(url) => Some(url),
            _ => None,
        };
        let reconnected = tokio::select! {
            _ = cancel.cancelled() => return,
            r = reconnect(&shared, &mut last_id, retry_hint) => r,
        };
        match reconnected {
            Ok((new_stream, endpoint)) => {
                stream = new_stream;
                // A new endpoint is a new server-side session: initialize it before any queued
                // message may go there (they wait for `Ready`).
                let new_session = old_endpoint.as_ref() != Some(&endpoint);
                if new_session && let Err(err) = replay_handshake(&shared, &endpoint).await {
                    tracing::warn!(server = %shared.server, "re-initializing after reconnect failed: {err}");
                }
                shared.endpoint.send_replace(Endpoint::Ready(endpoint));
                tracing::info!(server = %shared.server, "reconnected to {}", shared.url);
            }
            Err(err) => {
                tracing::error!(target: rkmcp_term_safe::NOTICE_TARGET, server = %shared.server, "giving up on {}: {err}", shared.url);
                shared
                    .endpoint
                    .send_replace(Endpoint::Gone(err.to_string()));
                return; // dropping `tx` ends the session
            }
        }
    }
}

/// Forwards messages until the stream ends. `None` when the receiver is gone, else why it ended.
async fn pump(
    shared: &Shared,
    stream: &mut EventStream,
    last_id: &mut Option<String>,
    retry_hint: &mut Option<Duration>,
    tx: &mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
) -> Option<String> {
    loop {
        let event = match stream.next().await {
            None => return Some("the server closed it".into()),
            Some(Err(err)) => return Some(err.to_string()),
            Some(Ok(event)) => event,
        };
        if event.id.is_some() {
            last_id.clone_from(&event.id);
        }
        if let Some(ms) = event.retry {
            *retry_hint = Some(Duration::from_millis(ms));
        }
        match event.event.as_deref() {
            None | Some("message") => {
                let Some(data) = event.data else { continue };
                match parse_message(&data) {
                    Ok(Some(message)) => {
                        if tx.send(message).await.is_err() {
                            return None;
                        }
                    }
                    Ok(None) => {} // the answer to a replayed initialize
                    Err(err) => tracing::warn!(
                        server = %shared.server,
                        "skipping an SSE message that is not JSON-RPC ({err}): {}",
                        super::http::printable(&data, 200)
                    ),
                }
            }
            Some("endpoint") => {
                // A server may move the endpoint mid-stream; same origin rules apply.
                match resolve_endpoint(&shared.url, event.data.as_deref().unwrap_or("").trim()) {
                    Ok(endpoint) => {
                        shared.endpoint.send_replace(Endpoint::Ready(endpoint));
                    }
                    Err(err) => tracing::warn!(server = %shared.server, "{err}"),
                }
            }
            Some(other) => {
                tracing::debug!(server = %shared.server, "ignoring SSE event `{other}`")
            }
        }
    }
}

/// A JSON-RPC message, or `None` for the answer to our replayed `initialize`.
fn parse_message(data: &str) -> Result<Option<RxJsonRpcMessage<RoleClient>>, serde_json::Error> {
    let value: serde_json::Value = serde_json::from_str(data)?;
    if value.get("id").and_then(|id| id.as_str()) == Some(REPLAY_ID) {
        return Ok(None);
    }
    serde_json::from_value(value).map(Some)
}

async fn reconnect(
    shared: &Shared,
    last_id: &mut Option<String>,
    retry_hint: Option<Duration>,
) -> Result<(EventStream, Url), SseError> {
    let mut delay = retry_hint.unwrap_or(FIRST_BACKOFF);
    let mut last_err = None;
    for attempt in 1..=MAX_RECONNECTS {
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(8));
        let attempt_result = async {
            let mut stream = open_stream(shared, last_id.as_deref()).await?;
            let endpoint = tokio::time::timeout(
                ENDPOINT_WAIT,
                wait_for_endpoint(shared, &mut stream, last_id),
            )
            .await
            .map_err(|_| SseError::EndpointTimeout {
                url: shared.url.to_string(),
                waited: ENDPOINT_WAIT,
            })??;
            Ok::<_, SseError>((stream, endpoint))
        }
        .await;
        match attempt_result {
            Ok(ok) => return Ok(ok),
            // A sign-in problem does not go away by retrying.
            Err(err @ (SseError::AuthRequired { .. } | SseError::CrossOrigin { .. })) => {
                return Err(err);
            }
            Err(err) => {
                tracing::info!(server = %shared.server, "reconnect attempt {attempt}/{MAX_RECONNECTS} failed: {err}");
                last_err = Some(err);
            }
        }
    }
    Err(SseError::Lost {
        url: shared.url.to_string(),
        reason: format!(
            "{MAX_RECONNECTS} reconnect attempts failed, the last with: {}",
            last_err.map(|e| e.to_string()).unwrap_or_default()
        ),
    })
}

/// Re-sends the session's handshake to a new server-side session.
async fn replay_handshake(shared: &Shared, endpoint: &Url) -> Result<(), SseError> {
    let (initialize, initialized) = {
        let handshake = shared.handshake.lock().unwrap_or_else(|e| e.into_inner());
        (handshake.initialize.clone(), handshake.initialized.clone())
    };
    if let Some(mut initialize) = initialize {
        initialize["id"] = serde_json::Value::String(REPLAY_ID.into());
        post(shared, endpoint, &initialize).await?;
    }
    if let Some(initialized) = initialized {
        post(shared, endpoint, &initialized).await?;
    }
    Ok(())
}

/// POSTs one JSON-RPC message; the answer comes on the stream.
async fn post(shared: &Shared, endpoint: &Url, body: &serde_json::Value) -> Result<(), SseError> {
    let send = |token: Option<String>| {
        let mut request = shared
            .client
            .post(endpoint.clone())
            .headers(shared.headers.clone())
            .json(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let token = match &shared.bearer {
        Some(bearer) => bearer.token().await?,
        None => None,
    };
    let post_err = |source| SseError::Post {
        endpoint: endpoint.to_string(),
        source,
    };
    let mut response = send(token.clone()).await.map_err(post_err)?;
    // One refresh and retry when the server rejects the token we sent.
    if response.status() == reqwest::StatusCode::UNAUTHORIZED
        && let Some(bearer) = &shared.bearer
        && let Some(fresh) = bearer
            .rejected(token.as_deref(), challenge_of(&response).as_deref())
            .await?
    {
        response = send(Some(fresh)).await.map_err(post_err)?;
    }
    let status = response.status();
    if status.is_success() {
        return Ok(());
    }
    if status == reqwest::StatusCode::UNAUTHORIZED {
        return Err(SseError::AuthRequired {
            url: endpoint.to_string(),
            challenge: response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        });
    }
    Err(SseError::PostStatus {
        endpoint: endpoint.to_string(),
        status,
        body: body_excerpt(response).await,
    })
}

/// The endpoint to POST to, waiting while a reconnect is under way.
async fn ready_endpoint(shared: &Shared) -> Result<Url, SseError> {
    let mut rx = shared.endpoint.subscribe();
    let wait = rx.wait_for(|e| !matches!(e, Endpoint::Pending));
    let state = match tokio::time::timeout(ENDPOINT_WAIT, wait).await {
        Ok(Ok(state)) => state.clone(),
        Ok(Err(_)) => Endpoint::Gone("the transport is closed".into()),
        Err(_) => Endpoint::Gone(format!(
            "still reconnecting after {}",
            humantime::format_duration(ENDPOINT_WAIT)
        )),
    };
    match state {
        Endpoint::Ready(url) => Ok(url),
        Endpoint::Gone(reason) => Err(SseError::Lost {
            url: shared.url.to_string(),
            reason,
        }),
        Endpoint::Pending => unreachable!("waited for a state other than Pending"),
    }
}

impl rmcp::transport::Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> std::borrow::Cow<'static, str> {
        "legacy HTTP+SSE".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let shared = self.shared.clone();
        async move {
            let value = serde_json::to_value(&item)?;
            match value.get("method").and_then(|m| m.as_str()) {
                Some("initialize") if value.get("id").is_some() => {
                    shared
                        .handshake
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .initialize = Some(value.clone());
                }
                Some("notifications/initialized") => {
                    shared
                        .handshake
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .initialized = Some(value.clone());
                }
                _ => {}
            }
            let endpoint = ready_endpoint(&shared).await?;
            post(&shared, &endpoint, &value).await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.cancel.cancel();
        std::future::ready(Ok(()))
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn endpoint_is_resolved_against_the_sse_url() {
        let sse = url("http://127.0.0.1:3001/sse");
        assert_eq!(
            resolve_endpoint(&sse, "/message?sessionId=abc").unwrap(),
            url("http://127.0.0.1:3001/message?sessionId=abc")
        );
        assert_eq!(
            resolve_endpoint(&sse, "messages/?session_id=1").unwrap(),
            url("http://127.0.0.1:3001/messages/?session_id=1")
        );
        assert_eq!(
            resolve_endpoint(&sse, "http://127.0.0.1:3001/m").unwrap(),
            url("http://127.0.0.1:3001/m")
        );
    }

    #[test]
    fn endpoint_on_another_origin_is_refused() {
        let sse = url("https://mcp.example.com/sse");
        for other in [
            "https://evil.example.net/message",
            "http://mcp.example.com/message",
            "https://mcp.example.com:8443/message",
            "//evil.example.net/message",
        ] {
            let err = resolve_endpoint(&sse, other).unwrap_err();
            assert!(
                matches!(err, SseError::CrossOrigin { .. }),
                "{other}: {err}"
            );
            assert!(err.to_string().contains("another origin"), "{err}");
        }
        // The default port written out is the same origin.
        assert!(resolve_endpoint(&sse, "https://MCP.example.com:443/m").is_ok());
    }

    #[test]
    fn replayed_initialize_answer_is_swallowed() {
        let answer = format!(r#"{{"jsonrpc":"2.0","id":"{REPLAY_ID}","result":{{}}}}"#);
        assert!(parse_message(&answer).unwrap().is_none());
        let normal = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#;
        assert!(parse_message(normal).unwrap().is_some());
        assert!(parse_message("not json").is_err());
    }
}
