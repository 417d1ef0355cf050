//! Remote servers: streamable HTTP (rmcp's client), legacy HTTP+SSE ([`super::sse`]) and `auto`,
//! which follows the spec's backwards-compatibility procedure: POST `initialize` to the URL; if the
//! server answers 400, 404 or 405, GET the same URL as a legacy SSE stream. The outcome is
//! remembered per server URL for the rest of the process, so reconnects go straight to the
//! transport that worked.
//!
//! rmcp is built with `reqwest-tls-no-provider` and rustls uses `ring` (installed once here):
//! the default aws-lc provider is a slow C build that buys nothing for a client.
//!
//! Proxies: reqwest honours `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (upper or lower
//! case) for every request rkmcp makes to a server or an authorization server.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::RoleClient;
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransportConfig, StreamableHttpError,
};

use super::auth::bearer_client::{BearerClient, find_auth_failure};
use super::auth::{AuthFailure, BearerSource};
use super::negotiate::{self, AttemptError, Handshake, StartError};
use super::probe::Probe;
use super::sse::{SseError, SseOptions, SseTransport};
use rkmcp_config::{Protocol, ServerConfig, TransportKind};

pub fn install_tls_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Err only means another provider was installed first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Redirects an MCP request follows: within the origin it was sent to.
const MAX_REDIRECTS: usize = 10;

/// A redirect of an MCP request to another origin, refused.
#[derive(Debug)]
struct CrossOriginRedirect {
    from: String,
    to: String,
}

impl std::fmt::Display for CrossOriginRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the server redirected to another origin ({} to {}); rkmcp does not follow such redirects, so the server's sign-in and headers go nowhere else",
            printable(&self.from, 200),
            printable(&self.to, 200)
        )
    }
}

impl std::error::Error for CrossOriginRedirect {}

/// Scheme, host and port: what a request's credentials are bound to.
pub fn same_origin(a: &url::Url, b: &url::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str().map(str::to_ascii_lowercase) == b.host_str().map(str::to_ascii_lowercase)
        && a.port_or_known_default() == b.port_or_known_default()
}

/// The HTTP client for a server: its connect timeout, the environment's proxy settings.
///
/// Requests carry the server's token (and configured headers, which may hold API keys), so
/// redirects are followed only within the origin of the request: a server cannot bounce them,
/// with whatever they carry, to another host, port or scheme (reqwest itself would drop only
/// `Authorization` and cookies on the way).
pub fn client(config: &ServerConfig) -> Result<reqwest::Client, String> {
    install_tls_provider();
    let same_origin_only = reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first().cloned() else {
            return attempt.follow();
        };
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        if same_origin(&first, attempt.url()) {
            return attempt.follow();
        }
        let error = CrossOriginRedirect {
            from: first.to_string(),
            to: attempt.url().to_string(),
        };
        attempt.error(error)
    });
    reqwest::Client::builder()
        .connect_timeout(config.connect_timeout)
        .redirect(same_origin_only)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", describe_reqwest(&e)))
}

/// A reqwest error with its cause chain; TLS failures name the host and the reason.
pub fn describe_reqwest(err: &reqwest::Error) -> String {
    let host = err.url().and_then(|u| {
        u.host_str()
            .map(|h| format!("{h}:{}", u.port_or_known_default().unwrap_or(0)))
    });
    let mut chain = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    let mut tls = None;
    while let Some(e) = cur {
        if let Some(rustls_err) = e.downcast_ref::<rustls::Error>() {
            tls = Some(rustls_err.to_string());
        }
        let text = e.to_string();
        if !chain.contains(&text) {
            chain.push(text);
        }
        cur = e.source();
    }
    if tls.is_none()
        && let Some(io) = find_io_tls(err)
    {
        tls = Some(io);
    }
    let what = if err.is_timeout() {
        "timed out".to_string()
    } else if err.is_connect() {
        "could not connect".to_string()
    } else {
        err.to_string()
    };
    match (tls, host) {
        (Some(reason), Some(host)) => format!("TLS with {host} failed: {reason}"),
        (Some(reason), None) => format!("TLS failed: {reason}"),
        (None, _) if chain.is_empty() => what,
        (None, _) => format!("{what}: {}", chain.join(": ")),
    }
}

/// rustls errors often travel inside an `io::Error`.
fn find_io_tls(err: &reqwest::Error) -> Option<String> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && let Some(inner) = io.get_ref()
            && let Some(r) = inner.downcast_ref::<rustls::Error>()
        {
            return Some(r.to_string());
        }
        cur = e.source();
    }
    None
}

/// Server text for the terminal: control characters (escape sequences) removed, cut at `max`.
pub fn printable(text: &str, max: usize) -> String {
    text.chars()
        .filter(|c| !c.is_control() || *c == ' ')
        .take(max)
        .collect()
}

/// The configured headers, minus `Authorization` (returned apart: it is a static bearer token).
fn headers(config: &ServerConfig) -> Result<(HeaderMap, Option<String>), String> {
    let mut map = HeaderMap::new();
    let mut auth = None;
    for (name, value) in &config.headers {
        if name.eq_ignore_ascii_case("authorization") {
            auth = Some(value.strip_prefix("Bearer ").unwrap_or(value).to_string());
            continue;
        }
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header name `{name}` is not valid: {e}"))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header `{name}` is not a valid header value"))?;
        map.insert(header, value);
    }
    Ok((map, auth))
}

/// Streamable HTTP, with tokens from `bearer` when the server needs them.
pub fn streamable_http(
    config: &ServerConfig,
    bearer: Option<Arc<dyn BearerSource>>,
) -> Result<RemoteTransport, String> {
    let client = client(config)?;
    let url = config.url.as_deref().ok_or("no `url` configured")?;
    let (headers, static_token) = headers(config)?;
    let headers: HashMap<_, _> = headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut transport_config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers);
    Ok(match bearer {
        Some(source) => RemoteTransport::AuthHttp(StreamableHttpClientTransport::with_client(
            BearerClient::new(client, source),
            transport_config,
        )),
        None => {
            if let Some(token) = static_token {
                transport_config = transport_config.auth_header(token);
            }
            RemoteTransport::Http(StreamableHttpClientTransport::with_client(
                client,
                transport_config,
            ))
        }
    })
}

/// Legacy HTTP+SSE: opens the stream and waits for the `endpoint` event.
pub async fn legacy_sse(
    config: &ServerConfig,
    bearer: Option<Arc<dyn BearerSource>>,
) -> Result<RemoteTransport, SseError> {
    let client = client(config).map_err(SseError::Setup)?;
    let raw = config.url.as_deref().unwrap_or_default();
    let url = url::Url::parse(raw)
        .map_err(|e| SseError::Setup(format!("`url` {raw} is not a URL: {e}")))?;
    let (mut headers, static_token) = headers(config).map_err(SseError::Setup)?;
    let bearer = match (bearer, static_token) {
        (Some(b), _) => Some(b),
        (None, Some(token)) => {
            if let Ok(v) = HeaderValue::from_str(&format!("Bearer {token}")) {
                headers.insert(reqwest::header::AUTHORIZATION, v);
            }
            None
        }
        (None, None) => None,
    };
    let transport = SseTransport::connect(SseOptions {
        server: config.name.clone(),
        client,
        url,
        headers,
        bearer,
        endpoint_timeout: config.connect_timeout / 2,
    })
    .await?;
    Ok(RemoteTransport::Sse(transport))
}

/// One of the remote transports, so the session layer serves them alike.
pub enum RemoteTransport {
    Http(StreamableHttpClientTransport<reqwest::Client>),
    AuthHttp(StreamableHttpClientTransport<BearerClient>),
    Sse(SseTransport),
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteTransportError {
    #[error(transparent)]
    Http(StreamableHttpError<reqwest::Error>),
    #[error(transparent)]
    Sse(#[from] SseError),
}

impl Transport<RoleClient> for RemoteTransport {
    type Error = RemoteTransportError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        use futures::FutureExt;
        match self {
            RemoteTransport::Http(t) => t
                .send(item)
                .map(|r| r.map_err(RemoteTransportError::Http))
                .boxed(),
            RemoteTransport::AuthHttp(t) => t
                .send(item)
                .map(|r| r.map_err(RemoteTransportError::Http))
                .boxed(),
            RemoteTransport::Sse(t) => t
                .send(item)
                .map(|r| r.map_err(RemoteTransportError::Sse))
                .boxed(),
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        use futures::FutureExt;
        match self {
            RemoteTransport::Http(t) => t.receive().boxed(),
            RemoteTransport::AuthHttp(t) => t.receive().boxed(),
            RemoteTransport::Sse(t) => t.receive().boxed(),
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        use futures::FutureExt;
        match self {
            RemoteTransport::Http(t) => t
                .close()
                .map(|r| r.map_err(RemoteTransportError::Http))
                .boxed(),
            RemoteTransport::AuthHttp(t) => t
                .close()
                .map(|r| r.map_err(RemoteTransportError::Http))
                .boxed(),
            RemoteTransport::Sse(t) => t
                .close()
                .map(|r| r.map_err(RemoteTransportError::Sse))
                .boxed(),
        }
    }
}

/// Which transport `auto` settled on for a URL, for the rest of the process.
static AUTO_CHOICE: Mutex<Vec<(String, TransportKind)>> = Mutex::new(Vec::new());

/// What `auto` settled on for `url` in this process (`Http` or `Sse`), if it ran.
pub fn auto_choice(url: &str) -> Option<TransportKind> {
    AUTO_CHOICE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(u, _)| u == url)
        .map(|(_, k)| k.clone())
}

fn remember(url: &str, kind: TransportKind) {
    let mut choices = AUTO_CHOICE.lock().unwrap_or_else(|e| e.into_inner());
    choices.retain(|(u, _)| u != url);
    choices.push((url.to_string(), kind));
}

/// How connecting to a remote server failed, in words for the person at the terminal.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The server wants a sign-in we do not have.
    #[error("the server needs a sign-in{detail}: run `{command}`")]
    NeedsLogin { command: String, detail: String },
    #[error("{0}")]
    Auth(AuthFailure),
    /// The handshake failed for a reason of the protocol's (the session layer words it).
    #[error("initialize failed: {0}")]
    Initialize(Box<StartError>),
    #[error("{0}")]
    Other(String),
}

/// Connects and initializes a remote server with `serve` (the session layer's handshake on one
/// fresh connection, with the lifecycle and `server/discover` probe given), using the configured
/// transport, or for `auto` the backwards-compatibility procedure. Returns how the handshake went.
pub async fn connect<S, F, Fut>(
    config: &ServerConfig,
    serve: F,
) -> Result<(S, Handshake), ConnectError>
where
    F: Fn(RemoteTransport, ClientLifecycleMode, Option<Probe>) -> Fut,
    Fut: Future<Output = Result<S, ClientInitializeError>>,
{
    let bearer = super::auth::bearer_for(config)
        .await
        .map_err(ConnectError::Auth)?;
    connect_with(config, bearer, serve).await
}

/// [`connect`] with a given token source (e.g. [`super::auth::headless::AutoApproved::source`]).
pub async fn connect_with<S, F, Fut>(
    config: &ServerConfig,
    bearer: Option<Arc<dyn BearerSource>>,
    serve: F,
) -> Result<(S, Handshake), ConnectError>
where
    F: Fn(RemoteTransport, ClientLifecycleMode, Option<Probe>) -> Fut,
    Fut: Future<Output = Result<S, ClientInitializeError>>,
{
    let url = config.url.clone().unwrap_or_default();
    let kind = match &config.transport {
        TransportKind::Auto => auto_choice(&url).unwrap_or(TransportKind::Auto),
        other => other.clone(),
    };
    match kind {
        TransportKind::Sse => serve_sse(config, bearer, &serve).await,
        TransportKind::Http => serve_streamable(config, bearer, &serve)
            .await
            .map_err(|e| start_error(config, e)),
        _ => match serve_streamable(config, bearer.clone(), &serve).await {
            Ok(started) => {
                remember(&url, TransportKind::Http);
                Ok(started)
            }
            Err(err) => match refused_status_of(&err) {
                Some(status) => {
                    tracing::info!(
                        server = %config.name,
                        "POST initialize answered HTTP {status}: trying the legacy HTTP+SSE transport"
                    );
                    let started = serve_sse(config, bearer, &serve).await.map_err(|e| {
                        ConnectError::Other(format!(
                            "{e} (tried streamable HTTP first: POST answered HTTP {status})"
                        ))
                    })?;
                    remember(&url, TransportKind::Sse);
                    Ok(started)
                }
                None => Err(start_error(config, err)),
            },
        },
    }
}

/// Streamable HTTP, negotiated as the config's `protocol` says: each attempt is a new transport
/// (a probe the server left unanswered holds its POST, so `initialize` cannot follow it there).
async fn serve_streamable<S, F, Fut>(
    config: &ServerConfig,
    bearer: Option<Arc<dyn BearerSource>>,
    serve: &F,
) -> Result<(S, Handshake), StartError>
where
    F: Fn(RemoteTransport, ClientLifecycleMode, Option<Probe>) -> Fut,
    Fut: Future<Output = Result<S, ClientInitializeError>>,
{
    let attempt = |mode, probe| {
        let bearer = bearer.clone();
        async move {
            let transport = streamable_http(config, bearer).map_err(AttemptError::Open)?;
            serve(transport, mode, probe)
                .await
                .map_err(|e| AttemptError::Handshake(Box::new(e)))
        }
    };
    negotiate::start(config, false, attempt, |err| {
        !is_auth_error(err) && !is_connect_failure(err)
    })
    .await
}

async fn serve_sse<S, F, Fut>(
    config: &ServerConfig,
    bearer: Option<Arc<dyn BearerSource>>,
    serve: &F,
) -> Result<(S, Handshake), ConnectError>
where
    F: Fn(RemoteTransport, ClientLifecycleMode, Option<Probe>) -> Fut,
    Fut: Future<Output = Result<S, ClientInitializeError>>,
{
    let transport = legacy_sse(config, bearer).await.map_err(|e| match e {
        SseError::AuthRequired { challenge, .. } => needs_login(config, challenge.as_deref()),
        SseError::Auth(failure) => ConnectError::Auth(failure),
        other => ConnectError::Other(format!("legacy HTTP+SSE: {other}")),
    })?;
    // The legacy transport is older than `server/discover`: with `auto`, `initialize` at once.
    let (mode, handshake) = match &config.protocol {
        Protocol::Auto => (ClientLifecycleMode::Initialize, Handshake::LegacyTransport),
        pinned => (negotiate::lifecycle(pinned), Handshake::Pinned),
    };
    match serve(transport, mode, None).await {
        Ok(service) => Ok((service, handshake)),
        Err(err) => Err(start_error(
            config,
            StartError {
                error: AttemptError::Handshake(Box::new(err)),
                after_probe: None,
            },
        )),
    }
}

/// A sign-in is missing or refused: another connection would meet the same refusal.
fn is_auth_error(err: &ClientInitializeError) -> bool {
    if err.is_authorization_required() {
        return true;
    }
    if matches!(
        http_error(err),
        Some(StreamableHttpError::AuthRequired(_) | StreamableHttpError::InsufficientScope(_))
    ) {
        return true;
    }
    transport_error(err).is_some_and(|inner| find_auth_failure(inner).is_some())
}

/// The server could not be reached at all (refused, unreachable, TLS): nothing answered the probe.
fn is_connect_failure(err: &ClientInitializeError) -> bool {
    match http_error(err) {
        Some(StreamableHttpError::Client(e)) => e.is_connect() || e.is_timeout(),
        _ => false,
    }
}

fn needs_login(config: &ServerConfig, challenge: Option<&str>) -> ConnectError {
    let detail = challenge
        .map(super::auth::oauth::describe_challenge)
        .filter(|d| !d.starts_with("no details"))
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    ConnectError::NeedsLogin {
        command: super::auth::login_command(config),
        detail,
    }
}

/// Why a request's send failed, when it failed for want of a sign-in: a sign-in failure (the
/// reason and the command), or the server's 401/403 that nobody could answer. `None` for every
/// other failure.
pub fn auth_refusal(
    config: &ServerConfig,
    err: &(dyn std::error::Error + 'static),
) -> Option<String> {
    if let Some(failure) = find_auth_failure(err) {
        return Some(failure.to_string());
    }
    let http = match err.downcast_ref::<RemoteTransportError>() {
        Some(RemoteTransportError::Http(e)) => Some(e),
        Some(RemoteTransportError::Sse(SseError::AuthRequired { challenge, .. })) => {
            return Some(needs_login(config, challenge.as_deref()).to_string());
        }
        _ => err.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
    }?;
    match http {
        StreamableHttpError::AuthRequired(challenge) => {
            Some(needs_login(config, Some(&challenge.www_authenticate_header)).to_string())
        }
        StreamableHttpError::InsufficientScope(e) => Some(format!(
            "the server refused access for lack of scope ({}); sign in again with it: {}",
            super::auth::oauth::describe_challenge(&e.www_authenticate_header),
            super::auth::login_command(config)
        )),
        _ => None,
    }
}

/// The transport error inside an initialize failure.
fn transport_error(err: &ClientInitializeError) -> Option<&(dyn std::error::Error + 'static)> {
    match err {
        ClientInitializeError::TransportError { error, .. } => Some(error.error.as_ref()),
        // `protocol = "auto"` tries `server/discover` first; what the HTTP exchange said is in
        // the `initialize` that followed.
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => transport_error(fallback),
        _ => None,
    }
}

fn http_error(err: &ClientInitializeError) -> Option<&StreamableHttpError<reqwest::Error>> {
    let inner = transport_error(err)?;
    match inner.downcast_ref::<RemoteTransportError>() {
        Some(RemoteTransportError::Http(e)) => Some(e),
        _ => inner.downcast_ref::<StreamableHttpError<reqwest::Error>>(),
    }
}

/// The HTTP status when the server refused the streamable HTTP POST in the way the spec's
/// backwards-compatibility procedure treats as "legacy server": 400, 404 or 405.
fn refused_status(err: &ClientInitializeError) -> Option<u16> {
    match http_error(err)? {
        StreamableHttpError::UnexpectedServerResponse(text) => {
            let code = text.strip_prefix("HTTP ")?.get(..3)?.parse::<u16>().ok()?;
            [400, 404, 405].contains(&code).then_some(code)
        }
        _ => None,
    }
}

/// [`refused_status`] of a failed start's last attempt.
fn refused_status_of(err: &StartError) -> Option<u16> {
    match &err.error {
        AttemptError::Handshake(e) => refused_status(e),
        AttemptError::Open(_) => None,
    }
}

/// A failed start in words; a 401 becomes "run `rkmcp auth login …`".
fn start_error(config: &ServerConfig, err: StartError) -> ConnectError {
    match err.error {
        AttemptError::Open(text) => ConnectError::Other(text),
        AttemptError::Handshake(e) => initialize_error(config, *e, err.after_probe),
    }
}

fn initialize_error(
    config: &ServerConfig,
    err: ClientInitializeError,
    after_probe: Option<String>,
) -> ConnectError {
    if let Some(http) = http_error(&err) {
        match http {
            StreamableHttpError::AuthRequired(challenge) => {
                return needs_login(config, Some(&challenge.www_authenticate_header));
            }
            StreamableHttpError::InsufficientScope(e) => {
                return ConnectError::Other(format!(
                    "the server refused access for lack of scope ({}); sign in again with it: {}",
                    super::auth::oauth::describe_challenge(&e.www_authenticate_header),
                    super::auth::login_command(config)
                ));
            }
            StreamableHttpError::Client(e) => {
                let note = after_probe
                    .map(|why| format!(" (server/discover had failed first: {why})"))
                    .unwrap_or_default();
                return ConnectError::Other(format!(
                    "initialize failed: {}{note}",
                    describe_reqwest(e)
                ));
            }
            // Not an MCP endpoint at all (a web page, a proxy's answer): which handshake was
            // tried first does not matter.
            StreamableHttpError::UnexpectedContentType(content_type) => {
                return ConnectError::Other(super::errors::unexpected_content_type(
                    content_type.as_deref(),
                ));
            }
            _ => {}
        }
    }
    if let Some(inner) = transport_error(&err) {
        if let Some(failure) = find_auth_failure(inner) {
            return ConnectError::Auth(failure.clone());
        }
        if let Some(RemoteTransportError::Sse(SseError::AuthRequired { challenge, .. })) =
            inner.downcast_ref::<RemoteTransportError>()
        {
            return needs_login(config, challenge.as_deref());
        }
    }
    ConnectError::Initialize(Box::new(StartError {
        error: AttemptError::Handshake(Box::new(err)),
        after_probe,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_strips_escape_sequences() {
        assert_eq!(printable("ok\u{1b}[31mred\u{7}", 100), "ok[31mred");
        assert_eq!(printable("abcdef", 3), "abc");
    }

    #[test]
    fn auto_choice_is_remembered_per_url() {
        assert_eq!(auto_choice("http://a.test/mcp"), None);
        remember("http://a.test/mcp", TransportKind::Sse);
        remember("http://b.test/mcp", TransportKind::Http);
        assert_eq!(auto_choice("http://a.test/mcp"), Some(TransportKind::Sse));
        assert_eq!(auto_choice("http://b.test/mcp"), Some(TransportKind::Http));
    }
}
