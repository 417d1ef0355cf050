//! `rkmcp serve --http HOST:PORT`: streamable HTTP on rmcp's server transport (sessions, SSE
//! streams resumable with `Last-Event-ID`, and the 2026-07-28 stateless mode), behind three
//! checks made before a request reaches MCP:
//!
//! - `Host` must be a loopback name (or one of `[serve] allowed_hosts`) and a browser's `Origin`
//!   a loopback origin (or one of `[serve] allowed_origins`): DNS-rebinding protection;
//! - with `[serve.auth] bearer_token_env`, `Authorization: Bearer <token>` (compared in constant
//!   time), else `401` with `WWW-Authenticate: Bearer`;
//! - listening on anything but loopback needs that token: the gateway runs tools on this
//!   machine.
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
        "--http {0}: listening beyond loopback needs a bearer token: set [serve.auth] \
         bearer_token_env to a variable holding one (every client must then send it)"
    )]
    NeedsToken(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Parses and checks where to listen. Pure, so the rules are tested without sockets.
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
    let Some(given) = header.and_then(|h| {
        let (scheme, rest) = h.trim().split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
    }) else {
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

fn unauthorized() -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(
        Full::new(Bytes::from_static(
            b"{\"error\":\"unauthorized\",\"error_description\":\"rkmcp serve needs Authorization: Bearer <token>\"}",
        ))
        .boxed(),
    );
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        hyper::header::HeaderValue::from_static("Bearer realm=\"rkmcp\""),
    );
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Binds `addr` (so a taken port fails before anything else happens); returns the bound
/// address (port 0 picks one) and the serving future.
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
    let service = StreamableHttpService::new(
        move || Ok(gateway.connection()),
        Arc::new(LocalSessionManager::default()),
        server_config(settings, cancel.clone()),
    );
    let token: Option<Arc<str>> = token.map(Into::into);
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
            let service = service.clone();
            let token = token.clone();
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                let token = token.clone();
                async move {
                    if let Some(token) = &token {
                        let header = request
                            .headers()
                            .get(hyper::header::AUTHORIZATION)
                            .and_then(|v| v.to_str().ok());
                        if !authorized(header, token) {
                            return Ok::<_, Infallible>(unauthorized());
                        }
                    }
                    Ok(service.handle(request).await)
                }
            });
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                if let Err(err) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, handler)
                    .await
                {
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
        assert!(err.contains("bearer_token_env"), "{err}");
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
}
