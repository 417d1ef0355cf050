//! A person signs in: the authorization code grant with PKCE, the redirect received on a loopback
//! listener (127.0.0.1, a random port, RFC 8252) or pasted by hand on a machine without a browser;
//! and signing out again (RFC 7009 revocation where the server offers it).
//!
//! rmcp builds the authorization URL (PKCE S256, `state`, RFC 8707 `resource`, scopes from the
//! challenge or metadata plus `offline_access` when advertised), registers the client (configured,
//! client ID metadata document, or dynamic registration, in that order) and exchanges the code,
//! checking `state` and the RFC 9207 `iss`. This module runs the listener, opens the browser, and
//! stores the result.
use std::time::Duration;

use rmcp::transport::auth::{AuthError, AuthorizationRequest};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::oauth::{self, explain};
use super::store::{Entry, ServerStore, TokenStore};
use super::{AuthFailure, Step};
use rkmcp_config::ServerConfig;

/// How to sign in.
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// Scopes to ask for; empty means what the server's challenge or metadata names.
    pub scopes: Vec<String>,
    /// Open a browser (`$BROWSER`, else `xdg-open` when there is a display).
    pub open_browser: bool,
    /// Also accept the redirect URL pasted on stdin.
    pub accept_paste: bool,
    /// How long to wait for the person.
    pub timeout: Duration,
}

/// What `login` tells the person (on stderr, so `--json` stdout stays clean).
pub trait LoginUi: Send {
    fn say(&mut self, line: &str);
}

/// The outcome of a sign-in, for display. No tokens.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SignedIn {
    pub server: String,
    pub resource: String,
    pub issuer: Option<String>,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub expires_in_secs: Option<u64>,
    pub refreshable: bool,
}

impl SignedIn {
    pub fn from_entry(entry: &Entry) -> SignedIn {
        use oauth2::TokenResponse;
        let token = entry.credentials.token_response.as_ref();
        SignedIn {
            server: entry.server.clone(),
            resource: entry.resource.clone(),
            issuer: entry.credentials.issuer.clone(),
            client_id: entry.credentials.client_id.clone(),
            scopes: entry.credentials.granted_scopes.clone(),
            expires_in_secs: token.and_then(|t| t.expires_in()).map(|d| {
                let received = entry
                    .credentials
                    .token_received_at
                    .unwrap_or(entry.saved_at);
                (received + d.as_secs()).saturating_sub(super::store::now_secs())
            }),
            refreshable: token.is_some_and(|t| t.refresh_token().is_some()),
        }
    }
}

fn store_failure(server: &str, err: impl std::fmt::Display) -> AuthFailure {
    AuthFailure::new(server, Step::Store, err.to_string())
}

/// Signs in to `config`'s server interactively and stores the tokens.
pub async fn login(
    config: &ServerConfig,
    options: &LoginOptions,
    ui: &mut dyn LoginUi,
) -> Result<SignedIn, AuthFailure> {
    let name = config.name.as_str();
    let auth = config.auth.clone().unwrap_or_default();
    let store = TokenStore::open_default()
        .await
        .map_err(|e| store_failure(name, e))?;
    // Refuse an unsafe store before the person goes through the browser for nothing.
    store.entries().await.map_err(|e| store_failure(name, e))?;
    let url = oauth::server_url(config)?;
    let server_store = ServerStore::new(store, name, url.as_str(), auth.client_id.clone());
    let challenge = probe_challenge(config).await;
    let oauth::SignInManager {
        manager, metadata, ..
    } = oauth::sign_in_manager(config, challenge.as_deref(), |key| match key {
        Some(key) => server_store.clone().with_dpop_key(key.pem()),
        None => server_store.clone(),
    })
    .await?;

    let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(|e| {
        AuthFailure::new(
            name,
            Step::Authorization,
            format!("cannot listen on 127.0.0.1 for the redirect: {e}"),
        )
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| AuthFailure::new(name, Step::Authorization, e.to_string()))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    let mut request = AuthorizationRequest::new(&redirect_uri)
        .with_client_name("rkmcp")
        .with_initial_scope_selection();
    if !options.scopes.is_empty() {
        request = request.with_scopes(options.scopes.clone());
    } else if !auth.scopes.is_empty() {
        request = request.with_scopes(auth.scopes.clone());
    }
    let session = oauth::authorization_session(name, &auth, &metadata, manager, request).await?;
    let auth_url = session.get_authorization_url().to_string();
    // The authorization endpoint comes from the server's metadata: a `javascript:` or `file:`
    // URL there is never shown as a link nor handed to a browser.
    super::fetch_policy::check_browser_url(&auth_url).map_err(|refusal| {
        unusable_authorization_url(name, &metadata.authorization_endpoint, refusal)
    })?;

    ui.say(&format!(
        "Sign in to `{name}` at {}:",
        metadata
            .issuer
            .as_deref()
            .unwrap_or(&metadata.authorization_endpoint)
    ));
    ui.say(&format!("  {auth_url}"));
    if options.open_browser && open_browser(&auth_url) {
        ui.say("(opened in your browser)");
    }
    if options.accept_paste {
        ui.say("Waiting for the browser… or paste the URL you were redirected to here and press Enter:");
    } else {
        ui.say("Waiting for the browser…");
    }

    let redirect = tokio::time::timeout(
        options.timeout,
        receive_redirect(&listener, port, options.accept_paste),
    )
    .await
    .map_err(|_| {
        AuthFailure::new(
            name,
            Step::Authorization,
            format!(
                "no redirect within {}",
                humantime::format_duration(options.timeout)
            ),
        )
        .at(&metadata.authorization_endpoint)
        .next("run the command again and finish signing in in the browser")
    })??;
    let parsed = url::Url::parse(&redirect).map_err(|e| {
        AuthFailure::new(
            name,
            Step::Authorization,
            format!("the redirect URL is not a URL: {e}"),
        )
    })?;
    let param = |key: &str| {
        parsed
            .query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = param("error") {
        let description = param("error_description")
            .map(|d| format!(": {}", crate::http::printable(&d, 300)))
            .unwrap_or_default();
        return Err(AuthFailure::new(
            name,
            Step::Authorization,
            format!(
                "the authorization server answered {}{description}",
                crate::http::printable(&error, 100)
            ),
        )
        .at(&metadata.authorization_endpoint)
        .next("try again; if it keeps failing, check the scopes and client settings"));
    }
    session
        .handle_callback_url(&redirect)
        .await
        .map_err(|e| match e {
            AuthError::InternalError(msg) if msg.contains("state not found") => AuthFailure::new(
                name,
                Step::Authorization,
                "the redirect's `state` does not belong to this sign-in (a stale or forged redirect)",
            )
            .next("start the sign-in again"),
            e => {
                let step = match e {
                    AuthError::AuthorizationFailed(_)
                    | AuthError::AuthorizationServerMismatch { .. }
                    | AuthError::AuthorizationServerMissingIssuer { .. } => Step::Authorization,
                    _ => Step::Token,
                };
                explain(name, step, Some(&metadata.token_endpoint), e)
            }
        })?;
    let entry = server_store
        .entry()
        .await
        .map_err(|e| store_failure(name, e))?
        .ok_or_else(|| store_failure(name, "the tokens were not stored"))?;
    Ok(SignedIn::from_entry(&entry))
}

/// An authorization URL rkmcp will not open, as a failure.
pub fn unusable_authorization_url(
    name: &str,
    endpoint: &str,
    refusal: super::fetch_policy::Refusal,
) -> AuthFailure {
    AuthFailure::new(
        name,
        Step::Authorization,
        format!("the authorization server's sign-in page is not usable: {refusal}"),
    )
    .at(crate::http::printable(endpoint, 300))
    .next("the authorization server is misconfigured or hostile (tell its operator)")
}

/// The server's `WWW-Authenticate` for an unauthenticated `initialize`, which carries the
/// `resource_metadata` URL and the scopes it wants. `None` if it sent none.
async fn probe_challenge(config: &ServerConfig) -> Option<String> {
    let client = crate::http::client(config).ok()?;
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "rkmcp", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let response = client
        .post(config.url.as_deref()?)
        .header("Accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .ok()?;
    if !matches!(response.status().as_u16(), 401 | 403) {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()
        .map(str::to_string)
}

/// Opens `url` in `$BROWSER`, or with `xdg-open` when there is a display. False if neither.
fn open_browser(url: &str) -> bool {
    let command = match std::env::var("BROWSER") {
        Ok(b) if !b.trim().is_empty() => b,
        _ if std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some() =>
        {
            "xdg-open".into()
        }
        _ => return false,
    };
    let mut parts = command.split_whitespace();
    let Some(program) = parts.next() else {
        return false;
    };
    std::process::Command::new(program)
        .args(parts)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

/// The first redirect to reach the listener (or pasted on stdin).
async fn receive_redirect(
    listener: &TcpListener,
    port: u16,
    accept_paste: bool,
) -> Result<String, AuthFailure> {
    let pasted = async {
        if !accept_paste {
            return std::future::pending::<Option<String>>().await;
        }
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let line = line.trim();
            if line.contains("code=") || line.contains("error=") {
                return Some(line.to_string());
            }
        }
        std::future::pending::<Option<String>>().await
    };
    tokio::pin!(pasted);
    loop {
        tokio::select! {
            Some(line) = &mut pasted => return Ok(line),
            accepted = listener.accept() => {
                let Ok((mut socket, _)) = accepted else { continue };
                if let Some(target) = read_request_target(&mut socket).await {
                    if target.starts_with("/callback") {
                        let page = "<!doctype html><title>rkmcp</title><p>Signed in. You can close this tab and return to the terminal.</p>";
                        let _ = socket.write_all(format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                            page.len()
                        ).as_bytes()).await;
                        return Ok(format!("http://127.0.0.1:{port}{target}"));
                    }
                    let _ = socket.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
                }
            }
        }
    }
}

/// The request target of an HTTP/1 `GET` (the loopback redirect), or `None`.
async fn read_request_target(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buf = vec![0u8; 8192];
    let mut len = 0;
    // Read up to the end of the request line; the headers do not matter.
    while !buf[..len].contains(&b'\n') && len < buf.len() {
        let n = tokio::time::timeout(Duration::from_secs(5), socket.read(&mut buf[len..]))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        len += n;
    }
    parse_request_line(std::str::from_utf8(&buf[..len]).ok()?)
}

fn parse_request_line(request: &str) -> Option<String> {
    let line = request.lines().next()?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    (method == "GET" && target.starts_with('/')).then(|| target.to_string())
}

/// Forgets the sign-in for `config`'s server, revoking its tokens first where the authorization
/// server offers revocation (RFC 7009). Returns what was removed and any revocation problem.
pub async fn logout(
    config: &ServerConfig,
) -> Result<(Vec<Entry>, Option<AuthFailure>), AuthFailure> {
    let name = config.name.as_str();
    let auth = config.auth.clone().unwrap_or_default();
    let store = TokenStore::open_default()
        .await
        .map_err(|e| store_failure(name, e))?;
    let url = oauth::server_url(config)?;
    let server_store = ServerStore::new(store, name, url.as_str(), auth.client_id.clone());
    let entries: Vec<Entry> = server_store
        .store
        .entries()
        .await
        .map_err(|e| store_failure(name, e))?
        .into_iter()
        .filter(|e| e.resource == url.as_str())
        .collect();
    let mut problem = None;
    if !entries.is_empty()
        && let Err(e) = revoke_all(config, &entries).await
    {
        problem = Some(e);
    }
    let removed = server_store
        .remove_all()
        .await
        .map_err(|e| store_failure(name, e))?;
    Ok((removed, problem))
}

async fn revoke_all(config: &ServerConfig, entries: &[Entry]) -> Result<(), AuthFailure> {
    use oauth2::TokenResponse;
    let name = config.name.as_str();
    let auth = config.auth.clone().unwrap_or_default();
    let Some(endpoint) = oauth::discover_endpoint(config, "revocation_endpoint")
        .await?
        .endpoint
    else {
        return Ok(()); // nothing to revoke at; deleting is all we can do
    };
    let client = oauth::guarded_client(config)?;
    for entry in entries {
        let Some(tokens) = &entry.credentials.token_response else {
            continue;
        };
        let mut pairs = Vec::new();
        if let Some(refresh) = tokens.refresh_token() {
            pairs.push((refresh.secret().to_string(), "refresh_token"));
        }
        pairs.push((tokens.access_token().secret().to_string(), "access_token"));
        for (token, hint) in pairs {
            let mut form = vec![("token", token), ("token_type_hint", hint.to_string())];
            let mut request = client.post(&endpoint);
            match (&auth.client_id, &auth.client_secret) {
                (Some(id), Some(secret)) if id == entry.client_id() => {
                    request = request.basic_auth(id, Some(secret));
                }
                _ => form.push(("client_id", entry.client_id().to_string())),
            }
            let body = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
                .finish();
            let response = client
                .send(
                    request
                        .header(
                            reqwest::header::CONTENT_TYPE,
                            "application/x-www-form-urlencoded",
                        )
                        .body(body),
                )
                .await
                .map_err(|e| {
                    AuthFailure::new(name, Step::Revocation, e.to_string()).at(&endpoint)
                })?;
            let status = response.status;
            if !status.is_success() {
                let text = response.text();
                let detail = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .map(|v| {
                        let error = v["error"].as_str().unwrap_or("").to_string();
                        let description = v["error_description"].as_str().unwrap_or("").to_string();
                        format!("{error} {description}").trim().to_string()
                    })
                    .unwrap_or_default();
                return Err(AuthFailure::new(
                    name,
                    Step::Revocation,
                    format!("HTTP {status} {}", crate::http::printable(&detail, 300)),
                )
                .at(&endpoint)
                .next("the tokens were deleted here; they expire on the server by themselves"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_line_target() {
        assert_eq!(
            parse_request_line("GET /callback?code=a&state=b HTTP/1.1\r\nHost: x\r\n"),
            Some("/callback?code=a&state=b".into())
        );
        assert_eq!(parse_request_line("POST /callback HTTP/1.1\r\n"), None);
        assert_eq!(parse_request_line("garbage"), None);
    }
}
