//! `rkmcp serve --http HOST:PORT`: streamable HTTP on rmcp's server transport (sessions, SSE
//! streams resumable with `Last-Event-ID`, and the 2026-07-28 stateless mode), behind three
//! checks made before a request reaches MCP:
//!
//! - `Host` must be a loopback name (or one of `[serve] allowed_hosts`) and a browser's `Origin`
//!   a loopback origin (or one of `[serve] allowed_origins`): DNS-rebinding protection;
//! - with `[serve.auth] bearer_token_env`, `Authorization: Bearer <token>` (compared in constant
//!   time), else `401` with `WWW-Authenticate: Bearer`;
//! - with `[serve.auth] issuer`, an access token of that authorization server issued for this
//!   gateway ([`super::resource_server`]), else `401`/`403` naming the Protected Resource
//!   Metadata, which is served at `/.well-known/oauth-protected-resource` (and that path plus
//!   the resource's own path) without authentication;
//! - listening on anything but loopback needs one of those: the gateway runs tools on this
//!   machine;
//! - and [`super::limits`]: connections, sessions per client and in all, slow headers and
//!   bodies, bodies that are not JSON.
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::limits::{Limits, SessionAdmission, SessionLedger, admit_session};
use super::resource_server::{Judgement, ResourceServer};
use super::{Gateway, ServeSettings};

/// Browser origins always allowed: pages served from this machine.
const LOOPBACK_ORIGINS: [&str; 4] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
];
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Why the gateway will not listen as asked.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("--http {0}: not a HOST:PORT address (e.g. 127.0.0.1:8765)")]
    Address(String),
    #[error(
        "--http {0}: listening beyond loopback needs authentication: set [serve.auth] \
         bearer_token_env to a variable holding a token every client must send, or [serve.auth] \
         issuer to accept the access tokens of an OAuth authorization server"
    )]
    NeedsToken(String),
    #[error("{0}")]
    Auth(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Parses and checks where to listen. Pure, so the rules are tested without sockets.
/// `has_token`: clients must authenticate (a bearer token or OAuth).
pub fn listen_address(spec: &str, has_token: bool) -> Result<SocketAddr, ListenError> {
    let addr: SocketAddr = spec
        .trim()
        .parse()
        .map_err(|_| ListenError::Address(spec.to_string()))?;
    if !addr.ip().is_loopback() && !has_token {
        return Err(ListenError::NeedsToken(spec.to_string()));
    }
    Ok(addr)
}

/// Whether `header` (an `Authorization` value) carries `token`.
pub fn authorized(header: Option<&str>, token: &str) -> bool {
    let Some(given) = bearer(header) else {
        return false;
    };
    // Constant time over the token's length: the comparison does not stop at the first
    // differing byte.
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// rmcp's HTTP server configuration for these settings.
pub fn server_config(
    settings: &ServeSettings,
    cancel: CancellationToken,
) -> StreamableHttpServerConfig {
    let hosts: Vec<String> = LOOPBACK_HOSTS
        .iter()
        .map(|h| h.to_string())
        .chain(settings.allowed_hosts.iter().cloned())
        .collect();
    let origins: Vec<String> = LOOPBACK_ORIGINS
        .iter()
        .map(|o| o.to_string())
        .chain(settings.allowed_origins.iter().cloned())
        .collect();
    StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_cancellation_token(cancel)
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn refused(status: StatusCode, challenge: &str, error: &str, description: &str) -> Response<Body> {
    let mut response = json_response(
        status,
        &serde_json::json!({"error": error, "error_description": description}),
    );
    if let Ok(value) = hyper::header::HeaderValue::from_str(challenge) {
        response
            .headers_mut()
            .insert(hyper::header::WWW_AUTHENTICATE, value);
    }
    response
}

/// A JSON-RPC error for a request refused before it reached MCP (its id is not known yet).
fn jsonrpc_refusal(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    json_response(
        status,
        &serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {"code": code, "message": message},
        }),
    )
}

/// JSON-RPC's "server error" range: the request was fine, the gateway will not take it now.
const SERVER_BUSY: i64 = -32000;
/// JSON-RPC's parse error.
const PARSE_ERROR: i64 = -32700;

/// The answer on a connection beyond `max_connections`.
fn too_many_connections() -> Response<Body> {
    let mut response = jsonrpc_refusal(
        StatusCode::SERVICE_UNAVAILABLE,
        SERVER_BUSY,
        "rkmcp serve has too many open connections ([serve.limits] max_connections); try again shortly",
    );
    response.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from_static("1"),
    );
    response
}

/// The request with its body read (within the body timeout and rmcp's size limit) and, for a
/// JSON POST, checked to be JSON; or the answer that refuses it.
async fn read_body(
    request: Request<Incoming>,
    limits: &Limits,
    max_bytes: usize,
) -> Result<(Request<Full<Bytes>>, Option<String>), Response<Body>> {
    let (parts, body) = request.into_parts();
    let collected = tokio::time::timeout(
        limits.body_timeout,
        http_body_util::Limited::new(body, max_bytes).collect(),
    )
    .await;
    let bytes = match collected {
        Err(_) => {
            return Err(jsonrpc_refusal(
                StatusCode::REQUEST_TIMEOUT,
                PARSE_ERROR,
                &format!(
                    "the request body did not arrive within {} ([serve.limits] body_timeout)",
                    humantime::format_duration(limits.body_timeout)
                ),
            ));
        }
        Ok(Err(err))
            if err
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(jsonrpc_refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                PARSE_ERROR,
                &format!("the request body is larger than {max_bytes} bytes"),
            ));
        }
        Ok(Err(err)) => {
            return Err(jsonrpc_refusal(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                &format!("the request body could not be read: {err}"),
            ));
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let json_post = parts.method == hyper::Method::POST
        && parts
            .headers
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    let mut method = None;
    if json_post {
        // Syntax and depth (serde_json stops at 128 levels) without building the value.
        if let Err(err) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
            return Err(jsonrpc_refusal(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                &format!("the request body is not JSON: {err}"),
            ));
        }
        #[derive(serde::Deserialize)]
        struct Method {
            method: Option<String>,
        }
        method = serde_json::from_slice::<Method>(&bytes)
            .ok()
            .and_then(|m| m.method);
    }
    Ok((Request::from_parts(parts, Full::new(bytes)), method))
}

fn unauthorized() -> Response<Body> {
    refused(
        StatusCode::UNAUTHORIZED,
        "Bearer realm=\"rkmcp\"",
        "unauthorized",
        "rkmcp serve needs Authorization: Bearer <token>",
    )
}

/// Who may use the endpoint.
#[derive(Clone)]
enum Access {
    Open,
    Token(Arc<str>),
    OAuth {
        server: Arc<ResourceServer>,
        /// Where the Protected Resource Metadata is served (the challenge names it).
        metadata_url: Arc<str>,
        /// The paths it is served at.
        metadata_paths: Arc<[String]>,
    },
}

/// The bearer token of an `Authorization` header.
fn bearer(header: Option<&str>) -> Option<&str> {
    let (scheme, rest) = header?.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

/// Where RFC 9728 puts the metadata of `resource`: the well-known path with the resource's own
/// path appended (`/.well-known/oauth-protected-resource/mcp`); the bare well-known path is
/// served too, for clients that try it first.
fn metadata_locations(resource: &str) -> (String, Vec<String>) {
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    let Ok(url) = url::Url::parse(resource) else {
        return (WELL_KNOWN.into(), vec![WELL_KNOWN.into()]);
    };
    let own = url.path().trim_end_matches('/');
    let path = format!("{WELL_KNOWN}{own}");
    let full = format!("{}{path}", url.origin().ascii_serialization());
    let mut paths = vec![path];
    if !own.is_empty() {
        paths.push(WELL_KNOWN.into());
    }
    (full, paths)
}

/// The response that stops `request`, or `None` when it may reach MCP.
async fn gatekeeper(access: &Access, request: &Request<Incoming>) -> Option<Response<Body>> {
    let header = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match access {
        Access::Open => None,
        Access::Token(token) => (!authorized(header, token)).then(unauthorized),
        Access::OAuth {
            server,
            metadata_url,
            metadata_paths,
        } => {
            if request.method() == hyper::Method::GET
                && metadata_paths.iter().any(|p| p == request.uri().path())
            {
                return Some(json_response(StatusCode::OK, &server.metadata()));
            }
            let Some(token) = bearer(header) else {
                return Some(refused(
                    StatusCode::UNAUTHORIZED,
                    &server.challenge(metadata_url, None),
                    "unauthorized",
                    "rkmcp serve needs an access token of its authorization server (see the \
                     resource_metadata in WWW-Authenticate)",
                ));
            };
            let verdict = server.check(token).await;
            // Written only for a refusal: accepted requests are the hot path.
            let challenge = || server.challenge(metadata_url, Some(&verdict));
            match &verdict {
                Judgement::Accepted => None,
                Judgement::Invalid(why) => {
                    tracing::info!("access token refused: {why}");
                    Some(refused(
                        StatusCode::UNAUTHORIZED,
                        &challenge(),
                        "invalid_token",
                        why,
                    ))
                }
                Judgement::InsufficientScope(_) => Some(refused(
                    StatusCode::FORBIDDEN,
                    &challenge(),
                    "insufficient_scope",
                    "the access token lacks a scope rkmcp serve requires",
                )),
            }
        }
    }
}

/// Binds `addr` (so a taken port fails before anything else happens); with `[serve.auth]
/// issuer`, reads the issuer's metadata; returns the bound address (port 0 picks one) and the
/// serving future.
pub async fn bind(
    gateway: Gateway,
    settings: &ServeSettings,
    addr: SocketAddr,
    token: Option<String>,
    cancel: CancellationToken,
) -> Result<(SocketAddr, impl Future<Output = ()>), ListenError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError::Bind { addr, source })?;
    let bound = listener.local_addr().unwrap_or(addr);
    let access = match (token, &settings.auth.issuer) {
        (Some(token), _) => Access::Token(token.into()),
        (None, Some(_)) => {
            let server = ResourceServer::start(&settings.auth, &format!("http://{bound}/mcp"))
                .await
                .map_err(ListenError::Auth)?;
            let (metadata_url, paths) = metadata_locations(server.resource());
            Access::OAuth {
                server: Arc::new(server),
                metadata_url: metadata_url.into(),
                metadata_paths: paths.into(),
            }
        }
        (None, None) => Access::Open,
    };
    let limits = Arc::new(settings.limits.clone());
    let sessions = Arc::new(LocalSessionManager::default());
    let config = server_config(settings, cancel.clone());
    let max_body = config.max_request_body_bytes;
    let service =
        StreamableHttpService::new(move || Ok(gateway.connection()), sessions.clone(), config);
    let ledger = Arc::new(SessionLedger::default());
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let serving = async move {
        loop {
            let (stream, peer) = tokio::select! {
                _ = cancel.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(err) => {
                        // Out of file descriptors and the like: keep serving the others.
                        tracing::warn!("accepting a connection failed: {err}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout);
            let io = hyper_util::rt::TokioIo::new(stream);
            let Ok(permit) = connections.clone().try_acquire_owned() else {
                tracing::info!(%peer, "refused a connection: [serve.limits] max_connections reached");
                let busy = hyper::service::service_fn(|_: Request<Incoming>| async {
                    Ok::<_, Infallible>(too_many_connections())
                });
                http.keep_alive(false);
                tokio::spawn(async move {
                    let _ = http.serve_connection(io, busy).await;
                });
                continue;
            };
            let service = service.clone();
            let access = access.clone();
            let limits = limits.clone();
            let sessions = sessions.clone();
            let ledger = ledger.clone();
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                let access = access.clone();
                let limits = limits.clone();
                let sessions = sessions.clone();
                let ledger = ledger.clone();
                async move {
                    if let Some(stop) = gatekeeper(&access, &request).await {
                        return Ok::<_, Infallible>(stop);
                    }
                    let (request, method) = match read_body(request, &limits, max_body).await {
                        Ok(read) => read,
                        Err(refusal) => return Ok(refusal),
                    };
                    // `initialize` without a session opens one (2025-11-25 sessions).
                    let opens_session = method.as_deref() == Some("initialize")
                        && !request.headers().contains_key("mcp-session-id");
                    if opens_session {
                        let live = sessions.sessions.read().await;
                        let of_client = ledger.count(peer.ip(), |id| live.contains_key(id));
                        let refusal = match admit_session(&limits, of_client, live.len()) {
                            SessionAdmission::Admitted => None,
                            SessionAdmission::TooManyForClient => Some(jsonrpc_refusal(
                                StatusCode::TOO_MANY_REQUESTS,
                                SERVER_BUSY,
                                &format!(
                                    "this client has {of_client} sessions open, the most rkmcp serve allows one client ([serve.limits] max_sessions_per_client); close one (HTTP DELETE) or let it idle out"
                                ),
                            )),
                            SessionAdmission::TooManyInAll => Some(jsonrpc_refusal(
                                StatusCode::SERVICE_UNAVAILABLE,
                                SERVER_BUSY,
                                "rkmcp serve has as many sessions open as it allows ([serve.limits] max_sessions); try again later",
                            )),
                        };
                        drop(live);
                        if let Some(refusal) = refusal {
                            return Ok(refusal);
                        }
                    }
                    let response = service.handle(request).await;
                    if opens_session
                        && let Some(id) = response
                            .headers()
                            .get("mcp-session-id")
                            .and_then(|v| v.to_str().ok())
                    {
                        ledger.record(peer.ip(), id.to_string());
                    }
                    Ok(response)
                }
            });
            tokio::spawn(async move {
                let _permit = permit;
                if let Err(err) = http.serve_connection(io, handler).await {
                    tracing::debug!(%peer, "HTTP connection ended: {err}");
                }
            });
        }
    };
    Ok((bound, serving))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_allowed_without_a_token_and_nothing_else_is() {
        assert!(listen_address("127.0.0.1:8765", false).is_ok());
        assert!(listen_address("[::1]:0", false).is_ok());
        let err = listen_address("0.0.0.0:8765", false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bearer_token_env") && err.contains("issuer"),
            "{err}"
        );
        assert!(listen_address("0.0.0.0:8765", true).is_ok());
        let err = listen_address("localhost", false).unwrap_err().to_string();
        assert!(err.contains("HOST:PORT"), "{err}");
    }

    #[test]
    fn bearer_tokens() {
        assert!(authorized(Some("Bearer s3cret"), "s3cret"));
        assert!(authorized(Some("bearer  s3cret "), "s3cret"));
        assert!(!authorized(Some("Bearer s3cre"), "s3cret"));
        assert!(!authorized(Some("Bearer s3cretX"), "s3cret"));
        assert!(!authorized(Some("Basic s3cret"), "s3cret"));
        assert!(!authorized(None, "s3cret"));
    }

    #[test]
    fn protected_resource_metadata_lives_where_rfc_9728_puts_it() {
        let (url, paths) = metadata_locations("http://127.0.0.1:8765/mcp");
        assert_eq!(
            url,
            "http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            paths,
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        let (url, paths) = metadata_locations("https://board.example.org/");
        assert_eq!(
            url,
            "https://board.example.org/.well-known/oauth-protected-resource"
        );
        assert_eq!(paths, ["/.well-known/oauth-protected-resource"]);
    }
}
