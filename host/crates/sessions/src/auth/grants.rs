//! Grants rkmcp runs itself at the token endpoint, with nobody at the keyboard:
//! - client credentials authenticated with a `private_key_jwt` assertion (RFC 7523 §2.2);
//! - the JWT bearer grant (RFC 7523 §2.1) with a JWT the platform gives the workload (workload
//!   identity federation, SEP-1933);
//! - enterprise-managed authorization (SEP-990): the person's ID token exchanged at the IdP
//!   (RFC 8693) for an ID-JAG, presented to the server's authorization server as a JWT bearer grant.
//!
//! Discovery is rmcp's (the same as every other sign-in); the token requests are plain form POSTs
//! (RFC 6749 §3.2) because rmcp has no JWT bearer or token exchange grant and its JWT client
//! authentication needs aws-lc-sys. Tokens are kept in memory and fetched again on expiry or 401.
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use rmcp::transport::auth::InMemoryCredentialStore;
use serde::Deserialize;
use tokio::sync::Mutex;

use super::assertion::{CLIENT_ASSERTION_TYPE, client_assertion};
use super::{AuthFailure, BearerSource, Step, oauth};
use crate::http::printable;
use rkmcp_config::{AuthConfig, Grant, ServerConfig, SigningKey, TokenEndpointAuth};

pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// A token is fetched again this long before it expires, so a request never carries a token
/// that expires on the way.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// How the client proves who it is at a token endpoint.
pub enum ClientAuth {
    /// A public client: its ID (if it has one) in the form.
    None(Option<String>),
    /// RFC 6749 §2.3.1: HTTP Basic with the form-encoded ID and secret.
    Basic { id: String, secret: String },
    /// RFC 6749 §2.3.1: ID and secret in the form.
    Post { id: String, secret: String },
    /// RFC 7523 §2.2: a signed assertion for the authorization server `audience`.
    PrivateKeyJwt { id: String, key: SigningKey },
}

impl ClientAuth {
    /// The client authentication for the server's authorization server, per the config and the
    /// methods the authorization server advertises (`token_endpoint_auth_methods_supported`).
    pub fn for_server(auth: &AuthConfig, advertised: &[String]) -> Result<Self, String> {
        let id = auth.client_id.clone();
        if let (Some(id), Some(path)) = (&id, &auth.private_key_file) {
            let key = SigningKey::load(path, auth.private_key_algorithm)?;
            return Ok(ClientAuth::PrivateKeyJwt {
                id: id.clone(),
                key,
            });
        }
        let (Some(id), Some(secret)) = (id.clone(), auth.client_secret.clone()) else {
            return Ok(ClientAuth::None(id));
        };
        let post_only = !advertised.is_empty()
            && !advertised.iter().any(|m| m == "client_secret_basic")
            && advertised.iter().any(|m| m == "client_secret_post");
        Ok(match auth.token_endpoint_auth_method {
            Some(TokenEndpointAuth::ClientSecretPost) => ClientAuth::Post { id, secret },
            None if post_only => ClientAuth::Post { id, secret },
            _ => ClientAuth::Basic { id, secret },
        })
    }

    /// Adds the client's authentication to a token request for the authorization server
    /// `audience`.
    pub fn apply(&self, request: &mut TokenRequest, audience: &str) -> Result<(), String> {
        match self {
            ClientAuth::None(Some(id)) => request.form.push(("client_id".into(), id.clone())),
            ClientAuth::None(None) => {}
            ClientAuth::Basic { id, secret } => {
                // RFC 6749 §2.3.1: each part form-encoded before joining with `:`.
                let enc = |s: &str| -> String {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
                };
                request.basic = Some((enc(id), enc(secret)));
            }
            ClientAuth::Post { id, secret } => {
                request.form.push(("client_id".into(), id.clone()));
                request.form.push(("client_secret".into(), secret.clone()));
            }
            ClientAuth::PrivateKeyJwt { id, key } => {
                let assertion = client_assertion(key, id, audience)?;
                request.form.push(("client_id".into(), id.clone()));
                request
                    .form
                    .push(("client_assertion_type".into(), CLIENT_ASSERTION_TYPE.into()));
                request.form.push(("client_assertion".into(), assertion));
            }
        }
        Ok(())
    }
}

/// One request to a token endpoint.
#[derive(Default)]
pub struct TokenRequest {
    pub form: Vec<(String, String)>,
    /// HTTP Basic credentials (already form-encoded).
    pub basic: Option<(String, String)>,
}

impl TokenRequest {
    pub fn new(grant_type: &str) -> Self {
        TokenRequest {
            form: vec![("grant_type".into(), grant_type.into())],
            basic: None,
        }
    }

    pub fn param(mut self, name: &str, value: impl Into<String>) -> Self {
        self.form.push((name.into(), value.into()));
        self
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn body(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(self.form.iter())
            .finish()
    }
}

/// A token endpoint's answer (RFC 6749 §5.1, RFC 8693 §2.2.1).
#[derive(Debug, Deserialize)]
pub struct TokenAnswer {
    pub access_token: String,
    #[serde(default)]
    pub expires_in: Option<u64>,
    #[serde(default)]
    pub issued_token_type: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// POSTs a token request; failures name the step, the URL and the server's
/// `error`/`error_description` (never the request, which carries credentials).
pub async fn post(
    http: &super::guarded_http::GuardedHttp,
    server: &str,
    step: Step,
    url: &str,
    request: &TokenRequest,
) -> Result<TokenAnswer, AuthFailure> {
    let fail = |detail: String| AuthFailure::new(server, step, detail).at(url);
    let mut builder = http
        .post(url)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(reqwest::header::ACCEPT, "application/json")
        .body(request.body());
    if let Some((id, secret)) = &request.basic {
        builder = builder.basic_auth(id, Some(secret));
    }
    let response = http.send(builder).await.map_err(|e| fail(e.to_string()))?;
    let status = response.status;
    let text = response.text();
    if !status.is_success() {
        let detail = match serde_json::from_str::<ErrorAnswer>(&text) {
            Ok(e) => format!(
                "the server answered {status}: {}{}",
                printable(&e.error, 100),
                e.error_description
                    .map(|d| format!(": {}", printable(&d, 300)))
                    .unwrap_or_default()
            ),
            Err(_) => format!("the server answered {status} without an OAuth error"),
        };
        return Err(fail(detail));
    }
    serde_json::from_str(&text)
        .map_err(|_| fail("the answer is not a token response (no `access_token`)".into()))
}

/// The JWT a grant starts from, from `assertion_file` or `assertion_env`; errors name the key.
pub fn read_assertion(server: &str, auth: &AuthConfig) -> Result<String, AuthFailure> {
    let fail = |detail: String| AuthFailure::new(server, Step::Config, detail);
    let text = if let Some(path) = &auth.assertion_file {
        std::fs::read_to_string(path).map_err(|e| {
            fail(format!(
                "`auth.assertion_file`: cannot read {}: {e}",
                path.display()
            ))
        })?
    } else if let Some(var) = &auth.assertion_env {
        std::env::var(var).map_err(|_| {
            fail(format!(
                "environment variable `{var}` (auth.assertion_env) is not set"
            ))
        })?
    } else {
        return Err(fail(
            "no `auth.assertion_file` or `auth.assertion_env`".into(),
        ));
    };
    let jwt = text.trim().to_string();
    // A compact JWS has three dot-separated parts; catch an empty or wrong file early.
    if jwt.split('.').count() != 3 {
        return Err(fail(
            "the assertion (auth.assertion_file / assertion_env) is not a JWT".into(),
        ));
    }
    Ok(jwt)
}

struct Cached {
    token: String,
    expires: Option<Instant>,
}

/// Tokens from one of this module's grants, for a server's transport.
pub struct GrantBearer {
    config: ServerConfig,
    cached: Mutex<Option<Cached>>,
    /// The last failed fetch, answered again for [`FAILURE_MEMORY`]: one connection attempt
    /// makes several requests (the 2026 `server/discover` probe, then `initialize`), and each
    /// would otherwise fetch again and wait out a stalling token endpoint again, so the attempt
    /// timed out instead of saying what failed.
    failed: Mutex<Option<(Instant, AuthFailure)>>,
}

/// How long a failed token fetch is answered without fetching again.
const FAILURE_MEMORY: Duration = Duration::from_secs(15);

impl GrantBearer {
    pub fn new(config: &ServerConfig) -> Self {
        GrantBearer {
            config: config.clone(),
            cached: Mutex::new(None),
            failed: Mutex::new(None),
        }
    }

    /// [`Self::fetch`], unless it failed less than [`FAILURE_MEMORY`] ago: then that failure.
    async fn fetch_unless_failed(&self) -> Result<Cached, AuthFailure> {
        let mut failed = self.failed.lock().await;
        if let Some((at, failure)) = failed.as_ref()
            && at.elapsed() < FAILURE_MEMORY
        {
            return Err(failure.clone());
        }
        let fetched = self.fetch().await;
        *failed = fetched.as_ref().err().map(|f| (Instant::now(), f.clone()));
        fetched
    }

    /// Discovers the authorization server and runs the configured grant.
    async fn fetch(&self) -> Result<Cached, AuthFailure> {
        let name = &self.config.name;
        let auth = self.config.auth.clone().unwrap_or_default();
        let mut manager = oauth::manager(&self.config, None).await?;
        manager.set_credential_store(InMemoryCredentialStore::new());
        let metadata = oauth::discover(&self.config, &mut manager, None).await?;
        let scopes = if auth.scopes.is_empty() {
            manager.select_scopes(None, &[])
        } else {
            auth.scopes.clone()
        };
        // The authorization server's identity: the audience of assertions made for it.
        let issuer = metadata
            .issuer
            .clone()
            .unwrap_or_else(|| metadata.token_endpoint.clone());
        let resource = oauth::server_url(&self.config)?.to_string();
        let http = oauth::guarded_client(&self.config)?;
        let mut request = match auth.grant {
            Grant::ClientCredentials => TokenRequest::new("client_credentials"),
            Grant::JwtBearer => {
                TokenRequest::new(JWT_BEARER_GRANT).param("assertion", read_assertion(name, &auth)?)
            }
            Grant::EnterpriseManaged => {
                let id_jag = self
                    .exchange_at_idp(&auth, &issuer, &resource, &scopes)
                    .await?;
                TokenRequest::new(JWT_BEARER_GRANT).param("assertion", id_jag)
            }
            Grant::AuthorizationCode => {
                return Err(AuthFailure::new(
                    name,
                    Step::Config,
                    "the authorization code grant needs a person: use `rkmcp auth login`",
                ));
            }
        };
        if !scopes.is_empty() {
            request = request.param("scope", scopes.join(" "));
        }
        request = request.param("resource", resource);
        let advertised: Vec<String> = metadata
            .additional_fields
            .get("token_endpoint_auth_methods_supported")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let client = ClientAuth::for_server(&auth, &advertised)
            .map_err(|e| AuthFailure::new(name, Step::Config, e))?;
        client
            .apply(&mut request, &issuer)
            .map_err(|e| AuthFailure::new(name, Step::Token, e))?;
        let answer = post(&http, name, Step::Token, &metadata.token_endpoint, &request)
            .await
            .map_err(|f| f.next(next_step(&auth)))?;
        Ok(Cached {
            token: answer.access_token,
            expires: answer
                .expires_in
                .map(|s| Instant::now() + Duration::from_secs(s).saturating_sub(EXPIRY_MARGIN)),
        })
    }

    /// RFC 8693 token exchange at the enterprise IdP: the ID token for an ID-JAG addressed to
    /// the server's authorization server (`audience`) and the server itself (`resource`).
    async fn exchange_at_idp(
        &self,
        auth: &AuthConfig,
        audience: &str,
        resource: &str,
        scopes: &[String],
    ) -> Result<String, AuthFailure> {
        let name = &self.config.name;
        let id_token = read_assertion(name, auth)?;
        let endpoint = auth.idp_token_endpoint.clone().unwrap_or_default();
        let mut request = TokenRequest::new(TOKEN_EXCHANGE_GRANT)
            .param("requested_token_type", ID_JAG_TOKEN_TYPE)
            .param("subject_token", id_token)
            .param("subject_token_type", ID_TOKEN_TYPE)
            .param("audience", audience)
            .param("resource", resource);
        if !scopes.is_empty() {
            request = request.param("scope", scopes.join(" "));
        }
        let idp_client = match (&auth.idp_client_id, &auth.idp_client_secret) {
            (Some(id), Some(secret)) => ClientAuth::Basic {
                id: id.clone(),
                secret: secret.clone(),
            },
            (id, _) => ClientAuth::None(id.clone()),
        };
        idp_client
            .apply(&mut request, &endpoint)
            .map_err(|e| AuthFailure::new(name, Step::Token, e))?;
        // The identity provider is the person's configuration, not a server's: no address
        // policy, the same limits.
        let http = super::guarded_http::GuardedHttp::for_configured_url(&self.config)
            .map_err(|e| AuthFailure::new(name, Step::Config, e))?;
        let answer = post(&http, name, Step::Token, &endpoint, &request)
            .await
            .map_err(|f| {
                f.next("check your ID token (auth.assertion_file / assertion_env) and `auth.idp_client_id`")
            })?;
        if let Some(kind) = &answer.issued_token_type
            && kind != ID_JAG_TOKEN_TYPE
        {
            return Err(AuthFailure::new(
                name,
                Step::Token,
                format!(
                    "the identity provider issued a `{}`, not an ID-JAG ({ID_JAG_TOKEN_TYPE})",
                    printable(kind, 100)
                ),
            )
            .at(endpoint));
        }
        Ok(answer.access_token)
    }
}

/// What to check when the authorization server refuses the configured grant.
fn next_step(auth: &AuthConfig) -> &'static str {
    match auth.grant {
        Grant::ClientCredentials if auth.private_key_file.is_some() => {
            "check `[servers.auth] client_id` and `private_key_file` (is the public key registered with the server?)"
        }
        Grant::JwtBearer => {
            "check the workload's JWT (auth.assertion_file / assertion_env): its audience must be the authorization server"
        }
        _ => "check `[servers.auth] client_id` and `client_secret`",
    }
}

impl BearerSource for GrantBearer {
    fn token(&self) -> BoxFuture<'_, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            let mut cached = self.cached.lock().await;
            if let Some(c) = cached.as_ref()
                && c.expires.is_none_or(|at| Instant::now() < at)
            {
                return Ok(Some(c.token.clone()));
            }
            let fresh = self.fetch_unless_failed().await?;
            let token = fresh.token.clone();
            *cached = Some(fresh);
            Ok(Some(token))
        })
    }

    fn rejected<'a>(
        &'a self,
        sent: Option<&'a str>,
        _challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            let mut cached = self.cached.lock().await;
            let fresh = self.fetch_unless_failed().await?;
            let token = fresh.token.clone();
            *cached = Some(fresh);
            Ok((Some(token.as_str()) != sent).then_some(token))
        })
    }

    fn insufficient_scope<'a>(
        &'a self,
        challenge: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, AuthFailure>> {
        Box::pin(async move {
            Err(AuthFailure::new(
                &self.config.name,
                Step::Authorization,
                format!(
                    "the token lacks a scope the server requires ({})",
                    oauth::describe_challenge(challenge)
                ),
            )
            .next("add the scope to `[servers.auth] scopes`"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(toml_auth: &str) -> AuthConfig {
        let config = rkmcp_config::load_str(
            std::path::Path::new("/tmp/t.toml"),
            &format!(
                "[[servers]]\nname = \"w\"\nurl = \"https://w.example/mcp\"\n[servers.auth]\n{toml_auth}\n"
            ),
        )
        .unwrap();
        config.servers[0].auth.clone().unwrap()
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        let a = auth(
            "grant = \"client_credentials\"\nclient_id = \"a b:c\"\nclient_secret = \"p&ss/wd\"",
        );
        let client = ClientAuth::for_server(&a, &[]).unwrap();
        let mut request = TokenRequest::new("client_credentials");
        client.apply(&mut request, "https://as").unwrap();
        assert_eq!(
            request.basic,
            Some(("a+b%3Ac".to_string(), "p%26ss%2Fwd".to_string()))
        );
        assert_eq!(request.get("client_secret"), None);
    }

    #[test]
    fn post_is_used_where_only_post_is_advertised() {
        let a = auth("grant = \"client_credentials\"\nclient_id = \"c\"\nclient_secret = \"s\"");
        let client = ClientAuth::for_server(&a, &["client_secret_post".into()]).unwrap();
        let mut request = TokenRequest::new("client_credentials");
        client.apply(&mut request, "https://as").unwrap();
        assert_eq!(request.basic, None);
        assert_eq!(request.get("client_id"), Some("c"));
        assert_eq!(request.get("client_secret"), Some("s"));
    }

    #[test]
    fn private_key_jwt_sends_an_assertion_for_the_authorization_server() {
        use std::io::Write;
        let mut key = tempfile::NamedTempFile::new().unwrap();
        key.write_all(super::super::assertion::tests::P256.as_bytes())
            .unwrap();
        let a = auth(&format!(
            "grant = \"client_credentials\"\nclient_id = \"c\"\nprivate_key_file = \"{}\"",
            key.path().display()
        ));
        let client = ClientAuth::for_server(&a, &[]).unwrap();
        let mut request = TokenRequest::new("client_credentials");
        client.apply(&mut request, "https://as.example").unwrap();
        assert_eq!(
            request.get("client_assertion_type"),
            Some(CLIENT_ASSERTION_TYPE)
        );
        let jwt = request.get("client_assertion").unwrap();
        let decoded = jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(jwt).unwrap();
        assert_eq!(decoded.header.alg, jsonwebtoken::Algorithm::ES256);
        assert_eq!(decoded.claims["aud"], "https://as.example");
        assert_eq!(decoded.claims["iss"], "c");
        assert!(request.basic.is_none() && request.get("client_secret").is_none());
    }

    #[test]
    fn assertions_are_read_fresh_and_checked() {
        use std::io::Write;
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(b"aaa.bbb.ccc\n").unwrap();
        let a = auth(&format!(
            "grant = \"jwt_bearer\"\nassertion_file = \"{}\"",
            file.path().display()
        ));
        assert_eq!(read_assertion("w", &a).unwrap(), "aaa.bbb.ccc");
        std::fs::write(file.path(), "not a jwt").unwrap();
        let err = read_assertion("w", &a).unwrap_err().to_string();
        assert!(err.contains("is not a JWT"), "{err}");
        assert!(
            !err.contains("not a jwt"),
            "the contents must not leak: {err}"
        );
        std::fs::remove_file(file.path()).unwrap();
        let err = read_assertion("w", &a).unwrap_err().to_string();
        assert!(err.contains("`auth.assertion_file`: cannot read"), "{err}");
    }
}
