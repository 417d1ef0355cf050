//! Signing in with nobody at the keyboard, for authorization servers that approve at once: the
//! conformance suite's test servers answer an authorization request with a redirect straight back
//! to the client. The flow is the person's flow (discovery, registration, PKCE, `state`, `iss`,
//! `resource`, token exchange, refresh, step-up) with the browser replaced by one HTTP GET whose
//! `Location` is the redirect. Tokens stay in memory.
//!
//! A real authorization server shows a login page instead of redirecting; then this fails at
//! the authorization step and says to use `rkmcp auth login`.
use std::sync::Arc;

use futures::future::BoxFuture;
use oauth2::TokenResponse;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, InMemoryCredentialStore,
    WWWAuthenticateParams,
};
use tokio::sync::Mutex;

use super::dpop::{self, DpopKey};
use super::oauth::{self, explain};
use super::{AuthFailure, BearerSource, Step};
use rkmcp_config::ServerConfig;

/// Where the (never opened) redirect points; any loopback URL does.
const REDIRECT_URI: &str = "http://127.0.0.1:33418/callback";
/// Step-up authorizations per source before giving up on a server that keeps asking.
const MAX_STEP_UPS: u32 = 3;

/// A token source that authorizes on the first 401 and again on 403 `insufficient_scope`.
pub struct AutoApproved {
    config: ServerConfig,
    state: Mutex<State>,
    /// The key the current token is bound to, when the server issued a DPoP token.
    dpop: std::sync::Mutex<Option<Arc<DpopKey>>>,
}

#[derive(Default)]
struct State {
    manager: Option<AuthorizationManager>,
    /// Scopes of the last authorization, for step-up (the union with what is asked for).
    scopes: Vec<String>,
    step_ups: u32,
}

impl AutoApproved {
    pub fn source(config: &ServerConfig) -> Arc<dyn BearerSource> {
        Arc::new(AutoApproved {
            config: config.clone(),
            state: Mutex::new(State::default()),
            dpop: std::sync::Mutex::new(None),
        })
    }

    /// Runs the authorization code flow; `scopes` empty means "as the server suggests".
    async fn authorize(
        &self,
        state: &mut State,
        challenge: Option<&str>,
        scopes: Vec<String>,
    ) -> Result<String, AuthFailure> {
        let name = &self.config.name;
        let auth = self.config.auth.clone().unwrap_or_default();
        let oauth::SignInManager {
            manager,
            metadata,
            dpop_key: key,
        } = oauth::sign_in_manager(&self.config, challenge, |_| InMemoryCredentialStore::new())
            .await?;
        let mut request = AuthorizationRequest::new(REDIRECT_URI).with_client_name("rkmcp");
        if scopes.is_empty() {
            request = request.with_initial_scope_selection();
            if !auth.scopes.is_empty() {
                request = request.with_scopes(auth.scopes.clone());
            }
        } else {
            request = request.with_scopes(scopes);
        }
        let session =
            oauth::authorization_session(name, &auth, &metadata, manager, request).await?;
        let auth_url = session.get_authorization_url().to_string();
        super::fetch_policy::check_browser_url(&auth_url).map_err(|refusal| {
            super::login::unusable_authorization_url(
                name,
                &metadata.authorization_endpoint,
                refusal,
            )
        })?;
        let redirect = follow_once(&self.config, &auth_url)
            .await
            .map_err(|detail| {
                AuthFailure::new(name, Step::Authorization, detail)
                    .at(&metadata.authorization_endpoint)
                    .next(format!(
                        "sign in as a person instead: {}",
                        super::login_command(&self.config)
                    ))
            })?;
        let callback = url::Url::parse(&redirect).map_err(|e| {
            AuthFailure::new(
                name,
                Step::Authorization,
                format!("the redirect is not a URL: {e}"),
            )
        })?;
        if let Some((_, error)) = callback.query_pairs().find(|(k, _)| k == "error") {
            let description = callback
                .query_pairs()
                .find(|(k, _)| k == "error_description")
                .map(|(_, d)| format!(": {d}"))
                .unwrap_or_default();
            return Err(AuthFailure::new(
                name,
                Step::Authorization,
                format!("the authorization server answered {error}{description}"),
            )
            .at(&metadata.authorization_endpoint));
        }
        let tokens = session
            .handle_callback_url(&redirect)
            .await
            .map_err(|e| explain(name, Step::Token, Some(&metadata.token_endpoint), e))?;
        state.scopes = session.auth_manager.get_current_scopes().await;
        state.manager = Some(session.auth_manager);
        // The server decides: a `DPoP` token is bound to the key, a `Bearer` one is not.
        let bound = dpop::is_dpop_token_type(tokens.token_type().as_ref());
        if let Ok(mut current) = self.dpop.lock() {
            *current = key.filter(|_| bound);
        }
        Ok(tokens.access_token().secret().to_string())
    }
}

/// GETs the authorization URL without following redirects; the `Location` it answers with.
async fn follow_once(config: &ServerConfig, url: &str) -> Result<String, String> {
    let client = super::guarded_http::GuardedHttp::for_server(config)?;
    let response = client
        .send(client.get(url))
        .await
        .map_err(|e| e.to_string())?;
    if !response.status.is_redirection() {
        return Err(format!(
            "the authorization server answered HTTP {} instead of redirecting back (it wants a person to sign in)",
            response.status
        ));
    }
    let location = response
        .headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or("the redirect has no Location")?;
    url::Url::parse(url)
        .and_then(|base| base.join(location))
        .map(|u| u.to_string())
        .map_err(|e| format!("the redirect Location is not a URL: {e}"))
}

impl BearerSource for AutoApproved {
    fn dpop_key(&self) -> Option<Arc<DpopKey>> {
        self.dpop.lock().ok()?.clone()
    }

    fn token(&self) -> BoxFuture<'_, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            let state = self.state.lock().await;
            let Some(manager) = state.manager.as_ref() else {
                return Ok(None); // not authorized yet: the server's 401 starts it
            };
            match manager.get_access_token().await {
                Ok(token) => Ok(Some(token)),
                Err(AuthError::AuthorizationRequired) => Ok(None),
                Err(e) => Err(explain(&self.config.name, Step::Refresh, None, e)),
            }
        })
    }

    fn rejected<'a>(
        &'a self,
        sent: Option<&'a str>,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            let mut state = self.state.lock().await;
            // A rejected token is refreshed first; only without one is there a new authorization.
            if sent.is_some()
                && let Some(manager) = state.manager.as_ref()
                && let Ok(fresh) = manager.refresh_token().await
            {
                return Ok(Some(fresh.access_token().secret().to_string()));
            }
            let token = self.authorize(&mut state, challenge, Vec::new()).await?;
            Ok((Some(token.as_str()) != sent).then_some(token))
        })
    }

    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            let mut state = self.state.lock().await;
            if state.step_ups >= MAX_STEP_UPS {
                return Err(AuthFailure::new(
                    &self.config.name,
                    Step::Authorization,
                    format!(
                        "the server still asks for more scope after {MAX_STEP_UPS} step-up authorizations ({})",
                        oauth::describe_challenge(challenge)
                    ),
                ));
            }
            state.step_ups += 1;
            let base = url::Url::parse("http://localhost/").expect("static URL");
            let required = WWWAuthenticateParams::parse(challenge, &base)
                .scope
                .unwrap_or_default();
            let mut scopes = state.scopes.clone();
            for s in required.split_whitespace() {
                if !scopes.iter().any(|have| have == s) {
                    scopes.push(s.to_string());
                }
            }
            let token = self.authorize(&mut state, Some(challenge), scopes).await?;
            Ok(Some(token))
        })
    }
}
