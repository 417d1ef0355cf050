//! What a request passes before it reaches MCP, in order: authentication (a wrong token waits
//! longer each time), the body (size, time, JSON), the session it names (only its opener's),
//! the session it opens (per client and in all), and the requests the client has in flight.
//! Each refusal is an HTTP status with a JSON-RPC error or an OAuth challenge a client can act
//! on. The limits themselves are [`super::limits`].
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use sha2::{Digest, Sha256};

use super::Gateway;
use super::limits::{
    FailedAttempts, InFlight, Limits, SessionAdmission, SessionLedger, admit_session,
};
use super::request_check::check_json_body;
use super::resource_server::{Judgement, Principal, ResourceServer};

/// Whether `header` (an `Authorization` value) carries `token`.
pub fn authorized(header: Option<&str>, token: &str) -> bool {
    let Some(given) = bearer(header) else {
        return false;
    };
    // Digests of equal length, compared without stopping at the first differing byte: neither
    // the token's length nor how much of it a guess got right shows in the time taken.
    let (a, b) = (
        Sha256::digest(given.as_bytes()),
        Sha256::digest(token.as_bytes()),
    );
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

pub(super) type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

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
pub(super) fn too_many_connections() -> Response<Body> {
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
        method = check_json_body(&bytes).map_err(|refusal| {
            jsonrpc_refusal(StatusCode::BAD_REQUEST, PARSE_ERROR, &refusal.to_string())
        })?;
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
pub(super) enum Access {
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
pub(super) fn metadata_locations(resource: &str) -> (String, Vec<String>) {
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

/// Who the request speaks for, or the answer that stops it. `None`: clients do not
/// authenticate (a loopback gateway without `[serve.auth]`).
async fn authenticate(
    access: &Access,
    request: &Request<Incoming>,
) -> Result<Option<Principal>, Refusal> {
    let header = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match access {
        Access::Open => Ok(None),
        Access::Token(token) if authorized(header, token) => Ok(Some(Principal::shared_token())),
        Access::Token(_) => Err(Refusal::BadCredentials(unauthorized())),
        Access::OAuth {
            server,
            metadata_url,
            metadata_paths,
        } => {
            if request.method() == hyper::Method::GET
                && metadata_paths.iter().any(|p| p == request.uri().path())
            {
                return Err(Refusal::Answer(json_response(
                    StatusCode::OK,
                    &server.metadata(),
                )));
            }
            let Some(token) = bearer(header) else {
                // No token at all is how every OAuth client starts: no penalty.
                return Err(Refusal::Answer(refused(
                    StatusCode::UNAUTHORIZED,
                    &server.challenge(metadata_url, None),
                    "unauthorized",
                    "rkmcp serve needs an access token of its authorization server (see the \
                     resource_metadata in WWW-Authenticate)",
                )));
            };
            let verdict = server.check(token).await;
            // Written only for a refusal: accepted requests are the hot path.
            let challenge = || server.challenge(metadata_url, Some(&verdict));
            match &verdict {
                Judgement::Accepted(principal) => Ok(Some(principal.clone())),
                Judgement::Invalid(why) => {
                    tracing::info!("access token refused: {why}");
                    Err(Refusal::BadCredentials(refused(
                        StatusCode::UNAUTHORIZED,
                        &challenge(),
                        "invalid_token",
                        why,
                    )))
                }
                Judgement::InsufficientScope(_) => Err(Refusal::Answer(refused(
                    StatusCode::FORBIDDEN,
                    &challenge(),
                    "insufficient_scope",
                    "the access token lacks a scope rkmcp serve requires",
                ))),
            }
        }
    }
}

/// Why authentication stopped a request.
enum Refusal {
    /// A wrong token: answered after the failed-attempt delay.
    BadCredentials(Response<Body>),
    /// Anything else (metadata served, a challenge to a client without a token, missing scope).
    Answer(Response<Body>),
}

/// The answer for a session id that is not the client's: the same as rmcp's for an unknown one,
/// so a client cannot learn which ids exist.
fn session_not_found() -> Response<Body> {
    let mut response =
        Response::new(Full::new(Bytes::from("Not Found: Session not found")).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}

/// Everything the requests of every connection share.
pub(super) struct FrontDoor {
    service: StreamableHttpService<Gateway, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    access: Access,
    limits: Limits,
    max_body: usize,
    ledger: SessionLedger,
    in_flight: InFlight,
    failures: FailedAttempts,
}

impl FrontDoor {
    pub fn new(
        service: StreamableHttpService<Gateway, LocalSessionManager>,
        sessions: Arc<LocalSessionManager>,
        access: Access,
        limits: Limits,
        max_body: usize,
    ) -> Self {
        FrontDoor {
            service,
            sessions,
            access,
            limits,
            max_body,
            ledger: SessionLedger::default(),
            in_flight: InFlight::default(),
            failures: FailedAttempts::default(),
        }
    }

    pub async fn handle(&self, peer: SocketAddr, request: Request<Incoming>) -> Response<Body> {
        let client = peer.ip();
        let principal = match authenticate(&self.access, &request).await {
            Ok(principal) => {
                if principal.is_some() {
                    self.failures.succeeded(client);
                }
                principal
            }
            Err(Refusal::Answer(response)) => return response,
            Err(Refusal::BadCredentials(response)) => {
                let wait = self.failures.failed(client);
                tracing::info!(%peer, "wrong credentials; answering in {wait:?}");
                tokio::time::sleep(wait).await;
                return response;
            }
        };
        let (request, method) = match read_body(request, &self.limits, self.max_body).await {
            Ok(read) => read,
            Err(refusal) => return refusal,
        };
        let session = request
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(id) = &session
            && !self.ledger.may_use(id, principal.as_ref())
        {
            tracing::info!(%peer, "refused a request naming a session another client opened");
            return session_not_found();
        }
        // `initialize` without a session opens one (2025-11-25 sessions).
        let opens_session = method.as_deref() == Some("initialize") && session.is_none();
        if opens_session && let Some(refusal) = self.admit_session(client).await {
            return refusal;
        }
        // POSTs only: a GET is a session's standing stream, bounded by the sessions.
        let in_flight = if request.method() == hyper::Method::POST {
            let max = self.limits.max_requests_per_client;
            let Some(entered) = self.in_flight.enter(client, max) else {
                return jsonrpc_refusal(
                    StatusCode::TOO_MANY_REQUESTS,
                    SERVER_BUSY,
                    &format!(
                        "this client has {max} requests in flight, the most rkmcp serve allows one \
                         client ([serve.limits] max_requests_per_client); wait for an answer first"
                    ),
                );
            };
            Some(entered)
        } else {
            None
        };
        let response = self.service.handle(request).await;
        if opens_session
            && let Some(id) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            self.ledger.record(client, principal, id.to_string());
        }
        match in_flight {
            None => response,
            // An SSE answer is still in flight while its stream runs: the place is given back
            // when hyper drops the body.
            Some(entered) => response.map(|body| {
                body.map_frame(move |frame| {
                    let _held = &entered;
                    frame
                })
                .boxed()
            }),
        }
    }

    /// The refusal for one more session of `client`, if it may not open one.
    async fn admit_session(&self, client: IpAddr) -> Option<Response<Body>> {
        let live = self.sessions.sessions.read().await;
        let of_client = self.ledger.count(client, |id| live.contains_key(id));
        match admit_session(&self.limits, of_client, live.len()) {
            SessionAdmission::Admitted => None,
            SessionAdmission::TooManyForClient => Some(jsonrpc_refusal(
                StatusCode::TOO_MANY_REQUESTS,
                SERVER_BUSY,
                &format!(
                    "this client has {of_client} sessions open, the most rkmcp serve allows one \
                     client ([serve.limits] max_sessions_per_client); close one (HTTP DELETE) or \
                     let it idle out"
                ),
            )),
            SessionAdmission::TooManyInAll => Some(jsonrpc_refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_BUSY,
                "rkmcp serve has as many sessions open as it allows ([serve.limits] \
                 max_sessions); try again later",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
