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
//! - and [`super::limits`]: connections, sessions per client and in all, requests in flight,
//!   slow headers and bodies, bodies that are not JSON, sessions bound to their opener, a delay
//!   after each wrong token ([`super::front_door`] applies them).
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::Request;
use hyper::body::Incoming;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::front_door::{Access, FrontDoor, metadata_locations, too_many_connections};
use super::resource_server::ResourceServer;
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
    let sessions = Arc::new(LocalSessionManager::default());
    let config = server_config(settings, cancel.clone());
    let max_body = config.max_request_body_bytes;
    let service =
        StreamableHttpService::new(move || Ok(gateway.connection()), sessions.clone(), config);
    let limits = settings.limits.clone();
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let header_timeout = limits.header_timeout;
    let front_door = Arc::new(FrontDoor::new(service, sessions, access, limits, max_body));
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
                .header_read_timeout(header_timeout);
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
            let front_door = front_door.clone();
            let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
                let front_door = front_door.clone();
                async move { Ok::<_, Infallible>(front_door.handle(peer, request).await) }
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
}
