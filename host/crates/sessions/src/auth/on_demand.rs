//! Signing in when a server asks, in the middle of whatever the person was doing.
//!
//! A person's sign-in ([`super::oauth::StoredSignIn`]) can fall short three ways while rkmcp
//! runs: there is none and the server answers 401; the server wants more scope than was granted
//! (403 `insufficient_scope`); or the server's resource metadata now names another authorization
//! server than the stored sign-in's (rmcp then drops the old tokens, which must never reach the
//! new one). [`SignInOnDemand`] wraps the stored sign-in and, when a [`Person`] is at hand (the
//! CLI installs one at a terminal with [`ask_person_to_sign_in`]), offers to sign in right there
//! and hands [`super::bearer_client`] the new token for its one retry. Without a person each case
//! ends in one error naming the exact command — the same sign-in, run by hand.
//!
//! The person is process-wide, like [`super::approve_without_a_person`]: a token source is made
//! deep inside the transports, and whether someone sits at the terminal is a fact about the
//! process, decided once by the command that runs.
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use tokio::sync::Mutex;

use super::oauth::{self, Stored, StoredSignIn};
use super::{AuthFailure, BearerSource, Step, login_command};
use rkmcp_config::ServerConfig;

/// Why a person is asked to sign in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInNeed {
    /// The server refused a request for want of a sign-in, and none is stored.
    NotSignedIn,
    /// The server wants scopes the stored sign-in lacks; `scopes` is what to ask for: the
    /// granted ones and the required ones together.
    MoreScope {
        granted: Vec<String>,
        scopes: Vec<String>,
    },
    /// The server's authorization server changed since the person signed in.
    AuthorizationServerChanged { from: String, to: String },
}

impl SignInNeed {
    /// The scopes to ask for; empty means what the server's challenge or metadata names.
    pub fn scopes(&self) -> Vec<String> {
        match self {
            SignInNeed::MoreScope { scopes, .. } => scopes.clone(),
            _ => Vec::new(),
        }
    }

    /// One sentence for the person, naming the server.
    pub fn describe(&self, server: &str) -> String {
        match self {
            SignInNeed::NotSignedIn => format!("server `{server}` needs you to sign in"),
            SignInNeed::MoreScope { granted, scopes } => {
                let new: Vec<&str> = scopes
                    .iter()
                    .filter(|s| !granted.contains(s))
                    .map(String::as_str)
                    .collect();
                format!(
                    "server `{server}` needs more access than you granted: it asks for {} (you granted {})",
                    if new.is_empty() {
                        "the same scopes again".to_string()
                    } else {
                        new.join(" ")
                    },
                    if granted.is_empty() {
                        "none".to_string()
                    } else {
                        granted.join(" ")
                    }
                )
            }
            SignInNeed::AuthorizationServerChanged { from, to } => format!(
                "the authorization server of `{server}` changed from {from} to {to}; your sign-in there is not sent to the new one"
            ),
        }
    }
}

/// Someone who can sign in now (a person at the terminal).
pub trait Person: Send + Sync {
    /// Offers to sign in to `config`'s server for `need` and, if the person agrees, signs in
    /// and stores the tokens. `Ok(false)` when they decline.
    fn sign_in<'a>(
        &'a self,
        config: &'a ServerConfig,
        need: &'a SignInNeed,
    ) -> BoxFuture<'a, Result<bool, AuthFailure>>;
}

static PERSON: OnceLock<Arc<dyn Person>> = OnceLock::new();

/// Makes every server's sign-in in this process offer to sign in through `person` when a
/// server asks for one. Only the first call counts.
pub fn ask_person_to_sign_in(person: Arc<dyn Person>) {
    let _ = PERSON.set(person);
}

fn person() -> Option<Arc<dyn Person>> {
    PERSON.get().cloned()
}

/// The token source for `grant = "authorization_code"`: the stored sign-in, or a new one when
/// the server asks and someone can give it.
pub struct SignInOnDemand {
    config: ServerConfig,
    person: Option<Arc<dyn Person>>,
    /// What the store held when last read; read by every request, so never held across an await.
    current: std::sync::Mutex<State>,
    /// One sign-in at a time: requests refused together wait for the first one's sign-in.
    signing: Mutex<()>,
}

#[derive(Clone)]
struct State {
    stored: Option<Arc<StoredSignIn>>,
    /// The authorization server changed and nobody signed in at the new one yet.
    changed: Option<(String, String)>,
}

impl SignInOnDemand {
    pub async fn open(config: &ServerConfig) -> Result<Arc<dyn BearerSource>, AuthFailure> {
        Self::open_with(config, person()).await
    }

    pub async fn open_with(
        config: &ServerConfig,
        person: Option<Arc<dyn Person>>,
    ) -> Result<Arc<dyn BearerSource>, AuthFailure> {
        let state = State::load(config).await?;
        Ok(Arc::new(SignInOnDemand {
            config: config.clone(),
            person,
            current: std::sync::Mutex::new(state),
            signing: Mutex::new(()),
        }))
    }

    fn current(&self) -> State {
        self.current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Asks the person (if any) to sign in for `need`, unless another request signed in since
    /// `seen` was read; the token to retry with, or `None` when there is nobody or they
    /// declined.
    async fn sign_in(&self, seen: &State, need: SignInNeed) -> Result<Option<String>, AuthFailure> {
        let Some(person) = &self.person else {
            return Ok(None);
        };
        let _turn = self.signing.lock().await;
        let now = self.current();
        let signed_in_meanwhile = match (&now.stored, &seen.stored) {
            (Some(now), Some(seen)) => !Arc::ptr_eq(now, seen),
            (Some(_), None) => true,
            _ => false,
        };
        if !signed_in_meanwhile {
            if !person.sign_in(&self.config, &need).await? {
                return Ok(None);
            }
            let loaded = State::load(&self.config).await?;
            *self
                .current
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = loaded;
        }
        match self.current().stored {
            Some(stored) => stored.token().await,
            None => Err(AuthFailure::new(
                &self.config.name,
                Step::Store,
                "the new sign-in was not found in the token store",
            )),
        }
    }

    fn changed_failure(&self, from: &str, to: &str) -> AuthFailure {
        AuthFailure::new(
            &self.config.name,
            Step::Authorization,
            format!(
                "the server's authorization server changed from {from} to {to}; the sign-in from {from} is not sent there"
            ),
        )
        .next(format!("sign in again: {}", login_command(&self.config)))
    }
}

impl State {
    async fn load(config: &ServerConfig) -> Result<State, AuthFailure> {
        Ok(match StoredSignIn::open(config).await? {
            Stored::SignedIn(stored) => State {
                stored: Some(stored),
                changed: None,
            },
            Stored::Nothing => State {
                stored: None,
                changed: None,
            },
            Stored::IssuerChanged { from, to } => State {
                stored: None,
                changed: Some((from, to)),
            },
        })
    }
}

impl BearerSource for SignInOnDemand {
    fn dpop_key(&self) -> Option<Arc<super::dpop::DpopKey>> {
        self.current().stored.and_then(|s| s.dpop_key())
    }

    fn token(&self) -> BoxFuture<'_, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            match self.current().stored {
                Some(stored) => stored.token().await,
                None => Ok(None),
            }
        })
    }

    fn rejected<'a>(
        &'a self,
        sent: Option<&'a str>,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            let seen = self.current();
            if let Some(stored) = &seen.stored
                && let Some(fresh) = stored.rejected(sent, challenge).await?
            {
                return Ok(Some(fresh));
            }
            let need = match &seen.changed {
                Some((from, to)) => SignInNeed::AuthorizationServerChanged {
                    from: from.clone(),
                    to: to.clone(),
                },
                None => SignInNeed::NotSignedIn,
            };
            if let Some(token) = self.sign_in(&seen, need).await? {
                return Ok(Some(token));
            }
            match &seen.changed {
                Some((from, to)) => Err(self.changed_failure(from, to)),
                // The caller turns the 401 into "run `rkmcp auth login …`".
                None => Ok(None),
            }
        })
    }

    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            let seen = self.current();
            let granted = seen
                .stored
                .as_ref()
                .map(|s| s.granted_scopes().to_vec())
                .unwrap_or_default();
            let need = SignInNeed::MoreScope {
                scopes: oauth::step_up_scopes(&granted, challenge),
                granted: granted.clone(),
            };
            if let Some(token) = self.sign_in(&seen, need).await? {
                return Ok(Some(token));
            }
            Err(oauth::more_scope_failure(
                &self.config.name,
                &login_command(&self.config),
                &granted,
                challenge,
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_up_asks_for_the_granted_scopes_and_the_new_ones() {
        let granted = vec!["mcp:tools".to_string(), "offline_access".to_string()];
        let challenge = r#"Bearer error="insufficient_scope", scope="mcp:tools mcp:admin""#;
        assert_eq!(
            oauth::step_up_scopes(&granted, challenge),
            ["mcp:tools", "offline_access", "mcp:admin"]
        );
        let need = SignInNeed::MoreScope {
            scopes: oauth::step_up_scopes(&granted, challenge),
            granted,
        };
        assert_eq!(
            need.describe("secure"),
            "server `secure` needs more access than you granted: it asks for mcp:admin (you granted mcp:tools offline_access)"
        );
    }

    #[test]
    fn the_advice_without_a_person_keeps_the_granted_scopes() {
        let failure = oauth::more_scope_failure(
            "secure",
            "rkmcp auth login secure",
            &["mcp:tools".to_string()],
            r#"Bearer error="insufficient_scope", scope="mcp:admin""#,
        );
        assert!(
            failure
                .to_string()
                .ends_with("rkmcp auth login secure --scope mcp:tools --scope mcp:admin"),
            "{failure}"
        );
    }
}
