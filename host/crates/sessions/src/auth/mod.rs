//! Signing in to remote MCP servers: OAuth 2.1 through rmcp's `auth` feature, client credentials,
//! static bearer tokens, and the token store.
//!
//! Data flow: the config's `[servers.auth]` picks a [`BearerSource`] ([`bearer_for`]); the HTTP
//! transports ask it for a token before each request and tell it when the server rejected one
//! (401: refresh once and retry) or wants more scope (403 `insufficient_scope`). People sign in
//! with `rkmcp auth login` ([`login`]); their tokens live in the [`store`], keyed by issuer,
//! resource and client, and are refreshed before they expire.
//!
//! Tokens never leave this module in a message: errors name the step, the URL and the server's
//! `error`/`error_description`, never a credential.
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;

use rkmcp_config::{Grant, ServerConfig};

pub mod assertion;
pub mod bearer_client;
pub mod challenge;
pub mod device;
pub mod dpop;
pub mod fetch_policy;
pub mod grants;
pub mod guarded_http;
pub mod headless;
pub mod login;
pub mod oauth;
pub mod on_demand;
pub mod store;

/// Where tokens for the transports come from.
pub trait BearerSource: Send + Sync {
    /// The token to send now (refreshed first if it is about to expire), or `None` to send the
    /// request unauthenticated and let the server's challenge decide.
    fn token(&self) -> BoxFuture<'_, Result<Option<String>, AuthFailure>>;
    /// The server answered 401 (with `challenge`, its `WWW-Authenticate`) to a request that
    /// carried `sent` (or no token): a token to retry once with, or `None` when only a new
    /// sign-in can help.
    fn rejected<'a>(
        &'a self,
        sent: Option<&'a str>,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>>;
    /// The server answered 403 `insufficient_scope`: a token with more scope to retry with.
    /// Sources that cannot ask a person return an error saying how to sign in again.
    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>>;
    /// The key the current token is bound to, when it is a DPoP token (RFC 9449): requests
    /// then carry `Authorization: DPoP` and a proof made with this key instead of a bearer.
    fn dpop_key(&self) -> Option<Arc<dpop::DpopKey>> {
        None
    }
}

/// The step of signing in that failed; every failure names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Discovery,
    Registration,
    Authorization,
    Token,
    Refresh,
    Revocation,
    Store,
    Config,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Discovery => "discovery",
            Step::Registration => "client registration",
            Step::Authorization => "authorization",
            Step::Token => "token request",
            Step::Refresh => "token refresh",
            Step::Revocation => "token revocation",
            Step::Store => "token store",
            Step::Config => "configuration",
        })
    }
}

/// A sign-in failure: which step, at which URL, what the server said, and what to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFailure {
    pub server: String,
    pub step: Step,
    pub url: Option<String>,
    /// What went wrong, including the server's `error` / `error_description` when it sent them.
    pub detail: String,
    /// What the person should do next.
    pub next: String,
}

impl AuthFailure {
    pub fn new(server: &str, step: Step, detail: impl Into<String>) -> Self {
        AuthFailure {
            server: server.to_string(),
            step,
            url: None,
            detail: detail.into(),
            next: String::new(),
        }
    }

    pub fn at(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    pub fn next(mut self, next: impl Into<String>) -> Self {
        self.next = next.into();
        self
    }
}

impl fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sign-in failed at {}", self.step)?;
        if let Some(url) = &self.url {
            write!(f, " ({url})")?;
        }
        write!(f, ": {}", self.detail)?;
        if !self.next.is_empty() {
            write!(f, "; {}", self.next)?;
        }
        Ok(())
    }
}

impl std::error::Error for AuthFailure {}

/// The exact command that signs a person in to `server`.
pub fn login_command(config: &ServerConfig) -> String {
    // The user config and the workspace files are found without flags; another file was given
    // with --config, so the command needs it too.
    let implicit = config
        .source
        .file_name()
        .is_some_and(|n| n == "rkmcp.toml" || n == "config.toml")
        && config.source.parent().is_some_and(|dir| {
            std::env::current_dir().is_ok_and(|cwd| dir == cwd || dir == cwd.join(".rkmcp"))
                || dirs::config_dir().is_some_and(|c| dir == c.join("rkmcp"))
        });
    if implicit || config.source.as_os_str().is_empty() {
        format!("rkmcp auth login {}", config.name)
    } else {
        format!(
            "rkmcp --config {} auth login {}",
            config.source.display(),
            config.name
        )
    }
}

/// Set by the conformance client: authorization code sign-ins happen in-process against servers
/// that approve at once ([`headless::AutoApproved`]) instead of from the store.
static APPROVE_WITHOUT_A_PERSON: AtomicBool = AtomicBool::new(false);

/// Makes every authorization code sign-in in this process headless (for the conformance suite's
/// test authorization servers, which redirect back without asking anyone).
pub fn approve_without_a_person() {
    APPROVE_WITHOUT_A_PERSON.store(true, Ordering::Relaxed);
}

/// The token source for a server's transport, per its `[servers.auth]`:
/// - `bearer_token_env`: the variable's value, as is;
/// - `grant = "client_credentials"`: tokens fetched with the client's own credentials;
/// - otherwise: the person's stored sign-in, if there is one (else requests go out without a
///   token); when the server asks for a sign-in, more scope or a sign-in at a new authorization
///   server, the person at the terminal is offered one ([`on_demand`]), and without a person the
///   error names the login command to run.
pub async fn bearer_for(
    config: &ServerConfig,
) -> Result<Option<Arc<dyn BearerSource>>, AuthFailure> {
    let auth = config.auth.clone().unwrap_or_default();
    if let Some(var) = &auth.bearer_token_env {
        let token = std::env::var(var).map_err(|_| {
            AuthFailure::new(
                &config.name,
                Step::Config,
                format!("environment variable `{var}` (auth.bearer_token_env) is not set"),
            )
            .next(format!("export {var}=<token> before starting rkmcp"))
        })?;
        return Ok(Some(Arc::new(StaticBearer {
            token,
            server: config.name.clone(),
        })));
    }
    match auth.grant {
        // The grants without a person are ours: rmcp lacks the JWT bearer and token exchange
        // grants, and its private_key_jwt needs a C crypto build. One token client serves all
        // of them, client credentials with a secret included.
        Grant::ClientCredentials | Grant::JwtBearer | Grant::EnterpriseManaged => {
            Ok(Some(Arc::new(grants::GrantBearer::new(config))))
        }
        Grant::AuthorizationCode if APPROVE_WITHOUT_A_PERSON.load(Ordering::Relaxed) => {
            Ok(Some(headless::AutoApproved::source(config)))
        }
        Grant::AuthorizationCode => on_demand::SignInOnDemand::open(config).await.map(Some),
    }
}

/// A fixed token from the environment; nothing to refresh.
struct StaticBearer {
    token: String,
    server: String,
}

impl BearerSource for StaticBearer {
    fn token(&self) -> BoxFuture<'_, Result<Option<String>, AuthFailure>> {
        Box::pin(async move { Ok(Some(self.token.clone())) })
    }

    fn rejected<'a>(
        &'a self,
        _sent: Option<&'a str>,
        _challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            Err(AuthFailure::new(
                &self.server,
                Step::Authorization,
                "the server rejected the static bearer token from auth.bearer_token_env",
            )
            .next("check that the token is current and meant for this server"))
        })
    }

    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            Err(AuthFailure::new(
                &self.server,
                Step::Authorization,
                format!(
                    "the static bearer token lacks a scope the server requires ({})",
                    oauth::describe_challenge(challenge)
                ),
            )
            .next("get a token with that scope"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_names_step_url_and_next_step() {
        let f = AuthFailure::new("web", Step::Token, "invalid_client: bad secret")
            .at("http://127.0.0.1:9/token")
            .next("check auth.client_secret");
        assert_eq!(
            f.to_string(),
            "sign-in failed at token request (http://127.0.0.1:9/token): invalid_client: bad secret; check auth.client_secret"
        );
    }

    #[test]
    fn login_command_names_an_explicit_config_file() {
        let config = rkmcp_config::load_str(
            std::path::Path::new("/somewhere/else/my.toml"),
            "[[servers]]\nname = \"web\"\nurl = \"https://example.com/mcp\"\n",
        )
        .unwrap();
        assert_eq!(
            login_command(&config.servers[0]),
            "rkmcp --config /somewhere/else/my.toml auth login web"
        );
    }
}
