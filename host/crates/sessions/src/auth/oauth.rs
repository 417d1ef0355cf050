//! OAuth token sources on rmcp's `AuthorizationManager`: a person's stored sign-in (refreshed
//! before expiry and after a 401) and the client credentials grant. rmcp does the protocol work
//! (RFC 9728 / 8414 / OIDC discovery with the 2025-03-26 fallbacks, PKCE, RFC 8707 `resource`,
//! `iss` checks, issuer-bound credentials); this module wires it to the config and the store and
//! turns its errors into [`AuthFailure`]s that say which step failed and what to do.
use futures::future::BoxFuture;
use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest,
    AuthorizationSession, CredentialStore, OAuthClientConfig, WWWAuthenticateParams,
};
use tokio::sync::Mutex;

use super::dpop::{DpopKey, TokenEndpointProofs};
use super::fetch_policy::FetchPolicy;
use super::guarded_http::{self, GuardedHttp};
use super::store::{ServerStore, TokenStore};
use super::{AuthFailure, BearerSource, Step, login_command};
use rkmcp_config::{AuthConfig, ServerConfig};

/// The server URL from the config (checked to be http(s) when the config was loaded).
pub fn server_url(config: &ServerConfig) -> Result<url::Url, AuthFailure> {
    let raw = config.url.as_deref().unwrap_or_default();
    url::Url::parse(raw).map_err(|e| {
        AuthFailure::new(
            &config.name,
            Step::Config,
            format!("`url` is not a URL: {e}"),
        )
    })
}

/// The guarded HTTP client for OAuth requests on behalf of `config`'s server.
pub fn guarded_client(config: &ServerConfig) -> Result<GuardedHttp, AuthFailure> {
    GuardedHttp::for_server(config)
        .map_err(|detail| AuthFailure::new(&config.name, Step::Config, detail))
}

/// rmcp's manager for a server, with the token store attached. Every request it makes goes
/// through [`GuardedHttp`]: the fetch policy of the server's URL, size and time limits.
pub async fn manager(
    config: &ServerConfig,
    store: Option<ServerStore>,
) -> Result<AuthorizationManager, AuthFailure> {
    let url = server_url(config)?;
    let client = std::sync::Arc::new(guarded_client(config)?);
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url.clone(), client)
        .await
        .map_err(|e| explain(&config.name, Step::Discovery, Some(url.as_str()), e))?;
    if let Some(store) = store {
        manager.set_credential_store(store);
    }
    Ok(manager)
}

/// A manager whose token requests carry DPoP proofs made with a new key, for an authorization
/// server that advertises DPoP (`metadata`, from a discovery by a plain [`manager`]).
///
/// Discovery runs again through this manager (rmcp keeps what it learned, such as the
/// resource, inside the manager), through the same guarded client as every other request.
pub async fn manager_with_proofs(
    config: &ServerConfig,
    metadata: &AuthorizationMetadata,
    key: std::sync::Arc<DpopKey>,
) -> Result<AuthorizationManager, AuthFailure> {
    let url = server_url(config)?;
    let failed = |detail: String| AuthFailure::new(&config.name, Step::Token, detail);
    let guarded = std::sync::Arc::new(guarded_client(config)?);
    let proofs =
        TokenEndpointProofs::new(guarded, &metadata.token_endpoint, key).map_err(failed)?;
    AuthorizationManager::new_with_oauth_http_client(url.clone(), std::sync::Arc::new(proofs))
        .await
        .map_err(|e| explain(&config.name, Step::Discovery, Some(url.as_str()), e))
}

/// A new proof key, as an [`AuthFailure`] at `step` if the system has no randomness.
pub fn new_dpop_key(config: &ServerConfig) -> Result<std::sync::Arc<DpopKey>, AuthFailure> {
    DpopKey::generate()
        .map(std::sync::Arc::new)
        .map_err(|detail| AuthFailure::new(&config.name, Step::Token, detail))
}

/// Discovers the authorization server and remembers its metadata on the manager.
pub async fn discover(
    config: &ServerConfig,
    manager: &mut AuthorizationManager,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, AuthFailure> {
    // rmcp skips a `resource_metadata` it will not fetch and looks elsewhere; a server that
    // points at an address it may not is told so instead.
    if let Some(raw) = challenge.and_then(challenge_resource_metadata) {
        let url = server_url(config)?;
        if let Ok(target) = url.join(&raw)
            && let Err(refusal) = FetchPolicy::for_server(&url).check_url(&target)
        {
            return Err(AuthFailure::new(
                &config.name,
                Step::Discovery,
                format!(
                    "the server's WWW-Authenticate challenge names its resource metadata at a URL rkmcp will not fetch: {refusal}"
                ),
            )
            .at(target.as_str())
            .next("the server's OAuth setup points somewhere rkmcp does not go (tell its operator)"));
        }
    }
    // What the guarded client met before this discovery belongs to an earlier request.
    guarded_http::take_problems(&config.name);
    let resolution = manager
        .resolve_metadata_from_challenge(challenge)
        .await
        .map_err(|e| explain(&config.name, Step::Discovery, config.url.as_deref(), e))?;
    if !resolution.source.is_discovered() {
        tracing::warn!(
            target: rkmcp_term_safe::NOTICE_TARGET,
            server = %config.name,
            "the server publishes no OAuth metadata; using the 2025-03-26 default endpoints (/authorize, /token, /register)"
        );
    }
    // Refused or failed candidates on the way to a usable one are not the reason for a
    // later failure.
    guarded_http::take_problems(&config.name);
    manager.set_metadata(resolution.metadata.clone());
    Ok(resolution.metadata)
}

/// What discovery found for a request rkmcp makes itself, past rmcp: a plain manager, the
/// metadata, and the endpoint the metadata names under `key`, if the server offers one.
pub struct Discovered {
    pub manager: AuthorizationManager,
    pub metadata: AuthorizationMetadata,
    pub endpoint: Option<String>,
}

/// Discovers the authorization server for an endpoint rmcp does not use
/// (`device_authorization_endpoint`, `revocation_endpoint`): rmcp keeps such metadata fields
/// only in `additional_fields`.
pub async fn discover_endpoint(
    config: &ServerConfig,
    key: &str,
) -> Result<Discovered, AuthFailure> {
    let mut manager = manager(config, None).await?;
    let metadata = discover(config, &mut manager, None).await?;
    let endpoint = metadata
        .additional_fields
        .get(key)
        .and_then(|v| v.as_str())
        .map(str::to_string);
    Ok(Discovered {
        manager,
        metadata,
        endpoint,
    })
}

/// A manager ready for an authorization-code sign-in, with the metadata it discovered and
/// the proof key its tokens will be bound to, if any.
pub struct SignInManager {
    pub manager: AuthorizationManager,
    pub metadata: AuthorizationMetadata,
    pub dpop_key: Option<std::sync::Arc<DpopKey>>,
}

/// Discovers the authorization server; where both servers take DPoP, makes a new proof key
/// and a manager that proves it (discovered again: rmcp keeps what discovery learned inside
/// the manager). `store_for(key)` gives the manager's token store: a person's sign-in stores
/// the key with its tokens, so refreshes and requests prove the same key.
pub async fn sign_in_manager<S: CredentialStore + 'static>(
    config: &ServerConfig,
    challenge: Option<&str>,
    store_for: impl Fn(Option<&DpopKey>) -> S,
) -> Result<SignInManager, AuthFailure> {
    let mut manager = manager(config, None).await?;
    manager.set_credential_store(store_for(None));
    let metadata = discover(config, &mut manager, challenge).await?;
    if !super::dpop::both_sides_take_it(&metadata, challenge) {
        return Ok(SignInManager {
            manager,
            metadata,
            dpop_key: None,
        });
    }
    let key = new_dpop_key(config)?;
    let mut manager = manager_with_proofs(config, &metadata, key.clone()).await?;
    manager.set_credential_store(store_for(Some(&key)));
    let metadata = discover(config, &mut manager, challenge).await?;
    Ok(SignInManager {
        manager,
        metadata,
        dpop_key: Some(key),
    })
}

/// Starts rmcp's authorization-code session for `request`, with the client the config asks
/// for: pre-registered (`client_id`, `client_secret`), else a client ID metadata document, else
/// dynamic registration.
pub async fn authorization_session(
    server: &str,
    auth: &AuthConfig,
    metadata: &AuthorizationMetadata,
    manager: AuthorizationManager,
    mut request: AuthorizationRequest,
) -> Result<AuthorizationSession, AuthFailure> {
    if let Some(id) = &auth.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &auth.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(cimd) = &auth.client_metadata_url {
        request = request.with_client_metadata_url(cimd.clone());
    }
    AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| {
            let step = match e {
                AuthError::RegistrationFailed(_) => Step::Registration,
                _ => Step::Authorization,
            };
            explain(server, step, metadata.registration_endpoint.as_deref(), e)
        })
}

/// The raw `resource_metadata` of a `WWW-Authenticate` challenge (rmcp's parser drops values
/// it will not use, and this is about saying why).
pub use super::challenge::challenge_resource_metadata;

/// Translates rmcp's error into a failure naming the step, the URL and the next action.
///
/// What the guarded client cut off or refused on the way (rmcp flattens it into "Request
/// failed") comes first: it is the reason.
pub fn explain(server: &str, step: Step, url: Option<&str>, err: AuthError) -> AuthFailure {
    let problems = guarded_http::take_problems(server);
    if let Some(last) = problems.last()
        && matches!(
            err,
            AuthError::DiscoveryRequestFailed { .. }
                | AuthError::AuthorizationServersUnavailable { .. }
                | AuthError::RegistrationFailed(_)
                | AuthError::TokenExchangeFailed(_)
                | AuthError::TokenRefreshFailed(_)
                | AuthError::ClientCredentialsError(_)
                | AuthError::InternalError(_)
        )
    {
        let step = match err {
            AuthError::DiscoveryRequestFailed { .. }
            | AuthError::AuthorizationServersUnavailable { .. } => Step::Discovery,
            AuthError::RegistrationFailed(_) => Step::Registration,
            AuthError::TokenExchangeFailed(_) | AuthError::ClientCredentialsError(_) => Step::Token,
            AuthError::TokenRefreshFailed(_) | AuthError::TokenRefreshRejected(_) => Step::Refresh,
            _ => step,
        };
        let mut detail: Vec<String> = Vec::new();
        for p in &problems {
            let text = p.to_string();
            if !detail.contains(&text) {
                detail.push(text);
            }
        }
        return AuthFailure::new(server, step, detail.join("; "))
            .at(last.url.clone())
            .next(match last.kind {
                guarded_http::FetchErrorKind::Refused(_) => {
                    "the server's OAuth setup points somewhere rkmcp does not go (tell its operator)"
                }
                guarded_http::FetchErrorKind::TooLarge(_)
                | guarded_http::FetchErrorKind::TooSlow(_) => {
                    "try again later; if it persists, the authorization server is misbehaving (tell its operator)"
                }
                guarded_http::FetchErrorKind::Failed(_) => "",
            });
    }
    let (step, detail, url) = match err {
        AuthError::DiscoveryRequestFailed { url, source } => (
            Step::Discovery,
            format!("the request failed: {}", source_chain(source.as_ref())),
            Some(url.to_string()),
        ),
        AuthError::ProtectedResourceMetadataInvalid { url, reason } => (
            Step::Discovery,
            format!("the protected resource metadata is unusable: {reason}"),
            Some(url.to_string()),
        ),
        AuthError::AuthorizationServersUnavailable {
            resource_metadata_url,
            authorization_servers,
        } => {
            let policy = url
                .and_then(|u| url::Url::parse(u).ok())
                .map(|u| FetchPolicy::for_server(&u));
            let refused: Vec<String> = authorization_servers
                .iter()
                .filter_map(|candidate| {
                    let parsed = resource_metadata_url.join(candidate).ok()?;
                    policy.as_ref()?.check_url(&parsed).err()
                })
                .map(|refusal| refusal.to_string())
                .collect();
            let detail = if refused.is_empty() {
                format!(
                    "none of the authorization servers it names ({}) publishes usable metadata",
                    authorization_servers.join(", ")
                )
            } else {
                format!(
                    "the authorization servers it names are not usable: {}",
                    refused.join("; ")
                )
            };
            (
                Step::Discovery,
                detail,
                Some(resource_metadata_url.to_string()),
            )
        }
        AuthError::RegistrationFailed(msg) => (Step::Registration, msg, url.map(String::from)),
        AuthError::TokenExchangeFailed(msg) => (Step::Token, msg, url.map(String::from)),
        AuthError::TokenRefreshFailed(msg) | AuthError::TokenRefreshRejected(msg) => {
            (Step::Refresh, msg, url.map(String::from))
        }
        AuthError::ClientCredentialsError(msg) => (Step::Token, msg, url.map(String::from)),
        AuthError::AuthorizationServerMismatch {
            expected_issuer,
            received_issuer,
        } => (
            step,
            format!(
                "the authorization server's issuer is `{received_issuer}`, not the expected `{expected_issuer}` (RFC 9207 / RFC 8414 issuer check)"
            ),
            url.map(String::from),
        ),
        AuthError::CredentialStoreError(msg) => (Step::Store, msg, None),
        AuthError::PkceUnsupported => (
            Step::Discovery,
            "the authorization server does not offer PKCE with S256, which OAuth 2.1 requires"
                .into(),
            url.map(String::from),
        ),
        other => (step, other.to_string(), url.map(String::from)),
    };
    let next = match step {
        Step::Store => "fix the token store as described, then try again".to_string(),
        Step::Discovery => "check the server's `url`; if it is right, the server's OAuth setup is broken (tell its operator)".into(),
        Step::Registration => "the server refused to register rkmcp: set `[servers.auth] client_id` (and `client_secret`) to a client registered with it".into(),
        _ => String::new(),
    };
    let mut failure = AuthFailure::new(server, step, detail).next(next);
    failure.url = url;
    failure
}

fn source_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = e.source();
    }
    parts.join(": ")
}

/// `error="…", error_description="…", scope="…"` of a `WWW-Authenticate` challenge, for messages.
pub fn describe_challenge(challenge: &str) -> String {
    let base = url::Url::parse("http://localhost/").expect("static URL");
    let params = WWWAuthenticateParams::parse(challenge, &base);
    let mut parts = Vec::new();
    if let Some(e) = &params.error {
        parts.push(format!("error={e}"));
    }
    if let Some(d) = &params.error_description {
        parts.push(format!("error_description={d}"));
    }
    if let Some(s) = &params.scope {
        parts.push(format!("scope={s}"));
    }
    if parts.is_empty() {
        "no details in its challenge".into()
    } else {
        parts.join(", ")
    }
}

/// A person's stored sign-in for one server.
pub struct StoredSignIn {
    server: String,
    login: String,
    manager: Mutex<AuthorizationManager>,
    /// The key the stored tokens are bound to, when they are DPoP tokens.
    dpop: Option<std::sync::Arc<DpopKey>>,
    /// The scopes the person granted at sign-in (a step-up asks for these and the new ones).
    granted: Vec<String>,
}

/// What the store holds for a server.
pub enum Stored {
    SignedIn(std::sync::Arc<StoredSignIn>),
    /// No sign-in, or one that expired and cannot be refreshed.
    Nothing,
    /// The server's resource metadata now names another authorization server than the one the
    /// stored sign-in is from; rmcp dropped the old tokens (they must never go to the new one).
    IssuerChanged {
        from: String,
        to: String,
    },
}

impl StoredSignIn {
    /// The sign-in stored for this server, ready to hand out (and refresh) tokens.
    pub async fn open(config: &ServerConfig) -> Result<Stored, AuthFailure> {
        let auth = config.auth.clone().unwrap_or_default();
        let store = TokenStore::open_default()
            .await
            .map_err(|e| AuthFailure::new(&config.name, Step::Store, e.to_string()))?;
        let url = server_url(config)?;
        let server_store =
            ServerStore::new(store, &config.name, url.as_str(), auth.client_id.clone());
        let entry = server_store
            .entry()
            .await
            .map_err(|e| AuthFailure::new(&config.name, Step::Store, e.to_string()))?;
        let Some(entry) = entry else {
            return Ok(Stored::Nothing);
        };
        let Some(tokens) = &entry.credentials.token_response else {
            return Ok(Stored::Nothing);
        };
        let dpop = match &entry.dpop_key {
            Some(pem) if super::dpop::is_dpop_token_type(tokens.token_type().as_ref()) => Some(
                std::sync::Arc::new(DpopKey::from_pem(pem).map_err(|detail| {
                    AuthFailure::new(&config.name, Step::Store, detail)
                        .next(format!("sign in again: {}", login_command(config)))
                })?),
            ),
            _ => None,
        };
        let mut manager = match &dpop {
            // Refreshes of DPoP tokens prove the same key; the token endpoint comes from a
            // discovery with rmcp's own client first (see `manager_with_proofs`).
            Some(key) => {
                let mut plain = manager(config, None).await?;
                let metadata = discover(config, &mut plain, None).await?;
                let mut with_proofs = manager_with_proofs(config, &metadata, key.clone()).await?;
                with_proofs.set_credential_store(server_store.with_dpop_key(key.pem()));
                with_proofs
            }
            None => manager(config, Some(server_store)).await?,
        };
        // Discovery (needed to refresh) also tells us whether the authorization server changed;
        // if it did, rmcp drops the old issuer's tokens and we need a new sign-in.
        let usable = manager
            .initialize_from_store()
            .await
            .map_err(|e| explain(&config.name, Step::Discovery, config.url.as_deref(), e))?;
        if !usable {
            // The store had tokens, so rmcp found the issuer changed and dropped them.
            let current = manager
                .resolve_metadata()
                .await
                .ok()
                .and_then(|r| r.metadata.issuer);
            return Ok(match (entry.credentials.issuer.clone(), current) {
                (Some(from), Some(to)) if from != to => Stored::IssuerChanged { from, to },
                _ => Stored::Nothing,
            });
        }
        configure_confidential(&mut manager, &auth, entry.client_id(), &config.name)?;
        Ok(Stored::SignedIn(std::sync::Arc::new(StoredSignIn {
            server: config.name.clone(),
            login: login_command(config),
            manager: Mutex::new(manager),
            dpop,
            granted: entry.credentials.granted_scopes.clone(),
        })))
    }

    /// The scopes granted at sign-in.
    pub fn granted_scopes(&self) -> &[String] {
        &self.granted
    }
}

/// The scopes a step-up asks for: those granted and those the challenge requires, each once,
/// in that order.
pub fn step_up_scopes(granted: &[String], challenge: &str) -> Vec<String> {
    let mut scopes: Vec<String> = Vec::new();
    for scope in granted
        .iter()
        .map(String::as_str)
        .chain(challenge_scopes(challenge).iter().map(String::as_str))
    {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_string());
        }
    }
    scopes
}

/// The `scope` of a `WWW-Authenticate` challenge, split.
pub fn challenge_scopes(challenge: &str) -> Vec<String> {
    let base = url::Url::parse("http://localhost/").expect("static URL");
    WWWAuthenticateParams::parse(challenge, &base)
        .scope
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// A pre-registered confidential client needs its secret for refreshes too.
pub fn configure_confidential(
    manager: &mut AuthorizationManager,
    auth: &AuthConfig,
    client_id: &str,
    server: &str,
) -> Result<(), AuthFailure> {
    if let (Some(id), Some(secret)) = (&auth.client_id, &auth.client_secret)
        && id == client_id
    {
        manager
            .configure_client(
                OAuthClientConfig::new(id.clone(), "http://127.0.0.1/callback")
                    .with_client_secret(secret.clone()),
            )
            .map_err(|e| explain(server, Step::Config, None, e))?;
    }
    Ok(())
}

impl BearerSource for StoredSignIn {
    fn dpop_key(&self) -> Option<std::sync::Arc<DpopKey>> {
        self.dpop.clone()
    }

    fn token(&self) -> BoxFuture<'_, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            match self.manager.lock().await.get_access_token().await {
                Ok(token) => Ok(Some(token)),
                // Expired and not refreshable: go without, and let the 401 say "log in".
                Err(AuthError::AuthorizationRequired) => Ok(None),
                Err(err) => Err(explain(&self.server, Step::Refresh, None, err)
                    .next(format!("if it persists, sign in again: {}", self.login))),
            }
        })
    }

    fn rejected<'a>(
        &'a self,
        sent: Option<&'a str>,
        _challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            if sent.is_none() {
                return Ok(None); // nothing usable stored: the person must sign in
            }
            match self.manager.lock().await.refresh_token().await {
                Ok(response) => Ok(Some(response.access_token().secret().to_string())),
                Err(AuthError::AuthorizationRequired | AuthError::TokenRefreshRejected(_)) => {
                    Ok(None)
                }
                Err(err) => Err(explain(&self.server, Step::Refresh, None, err)
                    .next(format!("if it persists, sign in again: {}", self.login))),
            }
        })
    }

    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            Err(more_scope_failure(
                &self.server,
                &self.login,
                &self.granted,
                challenge,
            ))
        })
    }
}

/// The server wants more scope and nobody can sign in here: the command that asks for the
/// granted scopes and the new ones together (asking for only the new ones would lose the old).
pub fn more_scope_failure(
    server: &str,
    login: &str,
    granted: &[String],
    challenge: &str,
) -> AuthFailure {
    let scope_flags: String = step_up_scopes(granted, challenge)
        .iter()
        .map(|s| format!(" --scope {s}"))
        .collect();
    AuthFailure::new(
        server,
        Step::Authorization,
        format!(
            "the server needs more access than you granted ({})",
            describe_challenge(challenge)
        ),
    )
    .next(format!(
        "sign in again with that scope: {login}{scope_flags}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_resource_metadata_of_a_challenge() {
        let cases = [
            (
                r#"Bearer resource_metadata="http://169.254.169.254/latest", scope="a""#,
                Some("http://169.254.169.254/latest"),
            ),
            (
                "Bearer error=invalid_token, Resource_Metadata=https://x.example/prm",
                Some("https://x.example/prm"),
            ),
            (r#"Bearer scope="a b""#, None),
            (r#"Bearer resource_metadata="""#, None),
        ];
        for (challenge, expected) in cases {
            assert_eq!(
                challenge_resource_metadata(challenge).as_deref(),
                expected,
                "{challenge}"
            );
        }
    }
}
