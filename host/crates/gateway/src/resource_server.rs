//! `[serve.auth] issuer`: the gateway as an OAuth 2.1 resource server (what the MCP
//! authorization spec asks of an HTTP server). Clients sign in at the configured authorization
//! server and present its access tokens; the gateway accepts a token only when
//!
//! - that issuer issued it: a JWT access token (RFC 9068) is verified against the keys the
//!   issuer's metadata names (`jwks_uri`); any other token is asked about at the issuer's
//!   introspection endpoint (RFC 7662) with the gateway's own client credentials;
//! - it is meant for this gateway: its audience names the gateway's resource URI (RFC 8707 — a
//!   token for another server must not be replayed here);
//! - it is active and unexpired, and carries every scope in `scopes`.
//!
//! Clients find the issuer through the Protected Resource Metadata (RFC 9728) the gateway serves
//! at `/.well-known/oauth-protected-resource` and names in every 401's `WWW-Authenticate`.
//!
//! The rules are [`judge`], pure and tested; the rest fetches metadata, keys and introspection
//! answers. Introspection answers are kept for at most [`INTROSPECTION_CACHE`] (never past the
//! token's `exp`), so a busy client does not cost one round trip to the issuer per request.
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::JwkSet;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::AuthSettings;

/// How long an introspection answer is trusted.
pub const INTROSPECTION_CACHE: Duration = Duration::from_secs(30);
/// Tokens remembered at most (the oldest are forgotten first).
const CACHE_ENTRIES: usize = 1024;

/// What the gateway makes of a presented token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The token is good; the client it was issued to (its sessions are bound to it).
    Accepted(Principal),
    /// 401 `invalid_token`: why.
    Invalid(String),
    /// 403 `insufficient_scope`: the scopes missing.
    InsufficientScope(Vec<String>),
}

/// The rules for a token's claims (a verified JWT's payload, or an introspection answer).
/// `introspected`: the claims came from introspection, so `active` must be `true`.
pub fn judge(
    claims: &Value,
    issuer: &str,
    resource: &str,
    scopes: &[String],
    now: u64,
    introspected: bool,
) -> Judgement {
    if introspected && claims.get("active") != Some(&Value::Bool(true)) {
        return Judgement::Invalid("the issuer says the token is not active".into());
    }
    match claims.get("iss").and_then(Value::as_str) {
        Some(iss) if same_uri(iss, issuer) => {}
        // Introspection answers come from the issuer itself, which may leave `iss` out.
        None if introspected => {}
        Some(other) => {
            return Judgement::Invalid(format!(
                "the token was issued by `{}`, not by `{issuer}`",
                printable(other)
            ));
        }
        None => return Judgement::Invalid("the token names no issuer (`iss`)".into()),
    }
    match claims.get("exp").and_then(Value::as_u64) {
        Some(exp) if exp <= now => return Judgement::Invalid("the token has expired".into()),
        Some(_) => {}
        None if introspected => {}
        None => return Judgement::Invalid("the token has no expiry (`exp`)".into()),
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.iter().any(|a| same_uri(a, resource)) {
        return Judgement::Invalid(if audiences.is_empty() {
            format!("the token names no audience; it must be issued for `{resource}`")
        } else {
            format!(
                "the token was issued for {}, not for `{resource}`",
                audiences
                    .iter()
                    .map(|a| format!("`{}`", printable(a)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
    let granted: Vec<&str> = match claims.get("scope") {
        Some(Value::String(s)) => s.split_whitespace().collect(),
        // Some issuers write `scp` as a list.
        _ => match claims.get("scp") {
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(s)) => s.split_whitespace().collect(),
            _ => Vec::new(),
        },
    };
    let missing: Vec<String> = scopes
        .iter()
        .filter(|s| !granted.contains(&s.as_str()))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Judgement::InsufficientScope(missing);
    }
    Judgement::Accepted(Principal::of(claims))
}

/// Who a token speaks for: its subject and the client it was issued to. A session opened with
/// one principal's token is not served to another's, so a leaked session id is no use without
/// the token of the client that opened it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(String);

impl Principal {
    /// The one principal of a shared bearer token (`[serve.auth] bearer_token_env`).
    pub fn shared_token() -> Self {
        Principal("bearer token".into())
    }

    /// `sub` and `client_id` (or `azp`, where OpenID providers put it); either may be missing,
    /// as in a client-credentials token without a subject.
    fn of(claims: &Value) -> Self {
        let field = |k: &str| claims.get(k).and_then(Value::as_str).unwrap_or("");
        let client = match field("client_id") {
            "" => field("azp"),
            id => id,
        };
        Principal(format!("sub={:?} client={:?}", field("sub"), client))
    }
}

/// URIs compared as RFC 8707 resources are: exactly, but a trailing `/` does not count.
fn same_uri(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// A value from a token, short and without control characters, for an error message.
fn printable(s: &str) -> String {
    let clean: String = s.chars().filter(|c| !c.is_control()).take(120).collect();
    clean
}

/// Whether `token` has the shape of a JWS (three base64url parts).
fn looks_like_jwt(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The issuer's metadata the gateway uses.
#[derive(Debug, Clone, Deserialize)]
struct IssuerMetadata {
    issuer: String,
    #[serde(default)]
    jwks_uri: Option<String>,
    #[serde(default)]
    introspection_endpoint: Option<String>,
}

struct Introspection {
    endpoint: String,
    client_id: String,
    secret: String,
}

/// The started check: the issuer's metadata read, its keys fetched.
pub struct ResourceServer {
    issuer: String,
    resource: String,
    scopes: Vec<String>,
    /// The issuer's signing keys (fetched again when a token names a key not among them).
    keys: tokio::sync::RwLock<Option<JwkSet>>,
    jwks_uri: Option<String>,
    introspection: Option<Introspection>,
    http: reqwest::Client,
    /// sha256(token) → (until, judgement).
    seen: Mutex<HashMap<[u8; 32], (Instant, Judgement)>>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl ResourceServer {
    /// Reads the issuer's metadata (RFC 8414, then OpenID Connect discovery) and its keys. Every
    /// failure names the setting and the URL; nothing listens until this succeeds.
    pub async fn start(settings: &AuthSettings, default_resource: &str) -> Result<Self, String> {
        let Some(issuer) = settings.issuer.as_deref() else {
            return Err("[serve.auth] issuer is not set".into());
        };
        let issuer = issuer.trim().trim_end_matches('/').to_string();
        let parsed = url::Url::parse(&issuer)
            .map_err(|e| format!("[serve.auth] issuer = \"{issuer}\" is not a URL: {e}"))?;
        let resource = settings
            .resource
            .clone()
            .unwrap_or_else(|| default_resource.to_string());
        url::Url::parse(&resource)
            .map_err(|e| format!("[serve.auth] resource = \"{resource}\" is not a URL: {e}"))?;
        rkmcp_sessions::http::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("[serve.auth]: no HTTP client: {e}"))?;
        let metadata = fetch_metadata(&http, &parsed, &issuer).await?;
        let introspection = match (
            &settings.introspection_client_id,
            &settings.introspection_client_secret_env,
        ) {
            (Some(id), Some(var)) => {
                let secret = std::env::var(var).ok().filter(|s| !s.trim().is_empty());
                let Some(secret) = secret else {
                    return Err(format!(
                        "[serve.auth] introspection_client_secret_env = \"{var}\", but ${var} is unset or empty"
                    ));
                };
                let Some(endpoint) = metadata.introspection_endpoint.clone() else {
                    return Err(format!(
                        "[serve.auth] introspection_client_id is set, but the issuer `{issuer}` \
                         publishes no introspection_endpoint"
                    ));
                };
                Some(Introspection {
                    endpoint,
                    client_id: id.clone(),
                    secret: secret.trim().to_string(),
                })
            }
            (None, None) => None,
            _ => {
                return Err("[serve.auth] introspection_client_id and \
                            introspection_client_secret_env go together"
                    .into());
            }
        };
        if metadata.jwks_uri.is_none() && introspection.is_none() {
            return Err(format!(
                "[serve.auth]: the issuer `{issuer}` publishes no jwks_uri, so its tokens can only \
                 be checked by introspection: set introspection_client_id and \
                 introspection_client_secret_env"
            ));
        }
        let server = ResourceServer {
            issuer,
            resource,
            scopes: settings.scopes.clone(),
            keys: tokio::sync::RwLock::new(None),
            jwks_uri: metadata.jwks_uri,
            introspection,
            http,
            seen: Mutex::new(HashMap::new()),
        };
        if server.jwks_uri.is_some()
            && let Err(err) = server.refresh_keys().await
        {
            // Opaque tokens may still be introspected; JWTs are refused until the keys load.
            tracing::warn!("[serve.auth]: {err}");
        }
        Ok(server)
    }

    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The Protected Resource Metadata document (RFC 9728).
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "rkmcp serve",
        });
        if !self.scopes.is_empty() {
            doc["scopes_supported"] = json!(self.scopes);
        }
        doc
    }

    /// The `WWW-Authenticate` value of a refusal ([`challenge`]).
    pub fn challenge(&self, metadata_url: &str, refusal: Option<&Judgement>) -> String {
        challenge(metadata_url, &self.scopes, refusal)
    }

    /// The verdict on `token`.
    pub async fn check(&self, token: &str) -> Judgement {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((until, verdict)) = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            && *until > Instant::now()
        {
            return verdict.clone();
        }
        let jwt = looks_like_jwt(token);
        let (verdict, claims_exp) = if jwt && self.jwks_uri.is_some() {
            (self.check_jwt(token).await, None)
        } else if self.introspection.is_some() {
            self.introspect(token).await
        } else {
            (
                Judgement::Invalid(
                    "the token is not a JWT and the gateway has no introspection client".into(),
                ),
                None,
            )
        };
        // JWT verdicts are cheap to recompute; introspection answers are cached briefly (an
        // accepted token never past its expiry).
        if self.introspection.is_some() && !jwt {
            let mut ttl = INTROSPECTION_CACHE;
            if let Some(exp) = claims_exp {
                ttl = ttl.min(Duration::from_secs(exp.saturating_sub(now_secs())));
            }
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            seen.retain(|_, (until, _)| *until > now);
            if seen.len() >= CACHE_ENTRIES {
                seen.clear();
            }
            seen.insert(key, (now + ttl, verdict.clone()));
        }
        verdict
    }

    async fn check_jwt(&self, token: &str) -> Judgement {
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            Err(e) => return Judgement::Invalid(format!("the token is not a valid JWT: {e}")),
        };
        let mut jwk = self.find_key(header.kid.as_deref()).await;
        if jwk.is_none() {
            // Keys rotate: a token signed with a new key makes the gateway fetch them again.
            if let Err(err) = self.refresh_keys().await {
                return Judgement::Invalid(err);
            }
            jwk = self.find_key(header.kid.as_deref()).await;
        }
        let Some(jwk) = jwk else {
            return Judgement::Invalid(format!(
                "the token's signing key ({}) is not among the issuer's keys",
                header
                    .kid
                    .as_deref()
                    .map(printable)
                    .unwrap_or("no kid".into())
            ));
        };
        let key = match jsonwebtoken::DecodingKey::from_jwk(&jwk) {
            Ok(k) => k,
            Err(e) => return Judgement::Invalid(format!("the issuer's key is unusable: {e}")),
        };
        let mut validation = jsonwebtoken::Validation::new(header.alg);
        // `judge` checks the claims, the same way for JWTs and introspection answers.
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        match jsonwebtoken::decode::<Value>(token, &key, &validation) {
            Ok(data) => judge(
                &data.claims,
                &self.issuer,
                &self.resource,
                &self.scopes,
                now_secs(),
                false,
            ),
            Err(e) => Judgement::Invalid(format!("the token's signature does not verify: {e}")),
        }
    }

    async fn find_key(&self, kid: Option<&str>) -> Option<jsonwebtoken::jwk::Jwk> {
        let keys = self.keys.read().await;
        let set = keys.as_ref()?;
        match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        }
    }

    async fn refresh_keys(&self) -> Result<(), String> {
        let Some(uri) = &self.jwks_uri else {
            return Err("the issuer publishes no keys".into());
        };
        let fail = |what: String| format!("fetching the issuer's keys from {uri}: {what}");
        let response = self
            .http
            .get(uri)
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("the issuer answered {}", response.status())));
        }
        let set: JwkSet = response
            .json()
            .await
            .map_err(|e| fail(format!("not a JWK set: {e}")))?;
        *self.keys.write().await = Some(set);
        Ok(())
    }

    /// RFC 7662; returns the verdict and the token's `exp`, if the issuer said.
    async fn introspect(&self, token: &str) -> (Judgement, Option<u64>) {
        let Some(intro) = &self.introspection else {
            return (Judgement::Invalid("no introspection client".into()), None);
        };
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        // client_secret_basic: both parts form-encoded first (RFC 6749 §2.3.1).
        let encode =
            |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let response = self
            .http
            .post(&intro.endpoint)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .basic_auth(encode(&intro.client_id), Some(encode(&intro.secret)))
            .body(body)
            .send()
            .await;
        let fail = |what: String| {
            // The issuer could not be asked: the request is refused (never let through), and
            // the cause is logged for the operator.
            tracing::warn!(endpoint = %intro.endpoint, "token introspection failed: {what}");
            (
                Judgement::Invalid("the token could not be checked with its issuer".into()),
                None,
            )
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => return fail(e.to_string()),
        };
        if !response.status().is_success() {
            return fail(format!("the issuer answered {}", response.status()));
        }
        let claims: Value = match response.json().await {
            Ok(v) => v,
            Err(e) => return fail(format!("not JSON: {e}")),
        };
        let exp = claims.get("exp").and_then(Value::as_u64);
        (
            judge(
                &claims,
                &self.issuer,
                &self.resource,
                &self.scopes,
                now_secs(),
                true,
            ),
            exp,
        )
    }
}

/// The `WWW-Authenticate` value of a refusal: where the metadata is, the scopes needed, and for
/// a presented token, why it was refused (RFC 6750 §3, RFC 9728 §5.1).
pub fn challenge(metadata_url: &str, scopes: &[String], refusal: Option<&Judgement>) -> String {
    let mut parts = vec![format!("Bearer resource_metadata=\"{metadata_url}\"")];
    if !scopes.is_empty() {
        parts.push(format!("scope=\"{}\"", scopes.join(" ")));
    }
    match refusal {
        Some(Judgement::Invalid(why)) => {
            parts.push("error=\"invalid_token\"".into());
            parts.push(format!("error_description=\"{}\"", quoted(why)));
        }
        Some(Judgement::InsufficientScope(missing)) => {
            parts.push("error=\"insufficient_scope\"".into());
            parts.push(format!(
                "error_description=\"missing scope: {}\"",
                quoted(&missing.join(" "))
            ));
        }
        _ => {}
    }
    parts.join(", ")
}

/// A string inside a quoted header parameter.
fn quoted(s: &str) -> String {
    printable(s).replace(['"', '\\'], "'")
}

/// RFC 8414 metadata at `/.well-known/oauth-authorization-server[/path]`, else OpenID Connect
/// discovery; its `issuer` must be the configured one exactly (RFC 8414 §3.3).
async fn fetch_metadata(
    http: &reqwest::Client,
    issuer_url: &url::Url,
    issuer: &str,
) -> Result<IssuerMetadata, String> {
    let path = issuer_url.path().trim_end_matches('/');
    let origin = issuer_url.origin().ascii_serialization();
    let candidates = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
        format!("{issuer}/.well-known/openid-configuration"),
    ];
    let mut tried = Vec::new();
    for url in candidates {
        if tried.iter().any(|(u, _): &(String, String)| *u == url) {
            continue;
        }
        let answer = match http.get(&url).send().await {
            Ok(r) if r.status().is_success() => r
                .json::<IssuerMetadata>()
                .await
                .map_err(|e| format!("not authorization server metadata: {e}")),
            Ok(r) => Err(format!("{}", r.status())),
            Err(e) => Err(e.to_string()),
        };
        match answer {
            Ok(meta) if same_uri(&meta.issuer, issuer) => return Ok(meta),
            Ok(meta) => {
                return Err(format!(
                    "[serve.auth] issuer = \"{issuer}\": its metadata at {url} names the issuer \
                     `{}` — they must be the same",
                    printable(&meta.issuer)
                ));
            }
            Err(why) => tried.push((url, why)),
        }
    }
    Err(format!(
        "[serve.auth] issuer = \"{issuer}\": no authorization server metadata found ({})",
        tried
            .iter()
            .map(|(u, why)| format!("{u}: {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISS: &str = "https://auth.example.org";
    const RES: &str = "http://127.0.0.1:8765/mcp";

    fn scopes(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn good() -> Value {
        json!({"iss": ISS, "aud": RES, "exp": 2000, "scope": "mcp:tools openid"})
    }

    #[test]
    fn tokens_of_other_clients_or_subjects_speak_for_other_principals() {
        let mut a = good();
        a["client_id"] = json!("app-a");
        a["sub"] = json!("alice");
        let mut b = a.clone();
        b["client_id"] = json!("app-b");
        let mut c = a.clone();
        c["sub"] = json!("bob");
        let mut azp = good();
        azp["azp"] = json!("app-a");
        azp["sub"] = json!("alice");
        assert_eq!(Principal::of(&a), Principal::of(&a.clone()));
        assert_ne!(Principal::of(&a), Principal::of(&b));
        assert_ne!(Principal::of(&a), Principal::of(&c));
        assert_eq!(Principal::of(&a), Principal::of(&azp));
        // A quote in a claim cannot make one principal read as another.
        let mut tricky = good();
        tricky["sub"] = json!("alice\" client=\"app-a");
        assert_ne!(Principal::of(&tricky), Principal::of(&a));
    }

    #[test]
    fn a_token_for_this_gateway_from_its_issuer_is_accepted() {
        assert_eq!(
            judge(&good(), ISS, RES, &scopes(&["mcp:tools"]), 1000, false),
            Judgement::Accepted(Principal::of(&good()))
        );
        // Audience lists, trailing slashes and `scp` lists.
        let mut c = good();
        c["aud"] = json!(["other", format!("{RES}/")]);
        c.as_object_mut().unwrap().remove("scope");
        c["scp"] = json!(["mcp:tools"]);
        assert_eq!(
            judge(&c, ISS, RES, &scopes(&["mcp:tools"]), 1000, false),
            Judgement::Accepted(Principal::of(&c))
        );
    }

    #[test]
    fn tokens_for_another_resource_issuer_or_time_are_refused_with_the_reason() {
        let cases = [
            (json!({"aud": "http://other/mcp"}), "not for"),
            (json!({"aud": null}), "no audience"),
            (json!({"iss": "https://evil.example"}), "issued by"),
            (json!({"iss": null}), "no issuer"),
            (json!({"exp": 999}), "expired"),
            (json!({"exp": null}), "no expiry"),
        ];
        for (change, why) in cases {
            let mut c = good();
            for (k, v) in change.as_object().unwrap() {
                if v.is_null() {
                    c.as_object_mut().unwrap().remove(k);
                } else {
                    c[k] = v.clone();
                }
            }
            match judge(&c, ISS, RES, &[], 1000, false) {
                Judgement::Invalid(reason) => assert!(reason.contains(why), "{c}: {reason}"),
                other => panic!("{c}: {other:?}"),
            }
        }
    }

    #[test]
    fn missing_scopes_are_named() {
        assert_eq!(
            judge(
                &good(),
                ISS,
                RES,
                &scopes(&["mcp:tools", "admin"]),
                1000,
                false
            ),
            Judgement::InsufficientScope(scopes(&["admin"]))
        );
    }

    #[test]
    fn introspection_answers_must_be_active_and_may_leave_out_iss_and_exp() {
        let mut c = good();
        c.as_object_mut().unwrap().remove("iss");
        c.as_object_mut().unwrap().remove("exp");
        c["active"] = json!(true);
        assert!(matches!(
            judge(&c, ISS, RES, &[], 1000, true),
            Judgement::Accepted(_)
        ));
        c["active"] = json!(false);
        assert!(matches!(
            judge(&c, ISS, RES, &[], 1000, true),
            Judgement::Invalid(r) if r.contains("not active")
        ));
        // `active` is required of introspection answers, not of JWTs.
        let mut c = good();
        assert!(matches!(
            judge(&c, ISS, RES, &[], 1000, true),
            Judgement::Invalid(_)
        ));
        c["active"] = json!("true");
        assert!(matches!(
            judge(&c, ISS, RES, &[], 1000, true),
            Judgement::Invalid(_)
        ));
    }

    #[test]
    fn jwt_shapes() {
        assert!(looks_like_jwt("eyJh.eyJz.c2ln"));
        assert!(!looks_like_jwt("opaque-token_123"));
        assert!(!looks_like_jwt("a.b"));
        assert!(!looks_like_jwt("a..c"));
        assert!(!looks_like_jwt("a.b.c d"));
    }

    #[test]
    fn refusals_carry_the_metadata_url_and_the_reason_without_breaking_quotes() {
        let url = "http://h/.well-known/oauth-protected-resource";
        let c = challenge(url, &[], None);
        assert_eq!(c, format!("Bearer resource_metadata=\"{url}\""));
        let c = challenge(
            url,
            &scopes(&["mcp:tools"]),
            Some(&Judgement::Invalid("bad \"quote\"\n".into())),
        );
        assert!(c.contains("scope=\"mcp:tools\""), "{c}");
        assert!(c.contains("error=\"invalid_token\""), "{c}");
        assert!(c.ends_with("error_description=\"bad 'quote'\""), "{c}");
        let c = challenge(
            url,
            &[],
            Some(&Judgement::InsufficientScope(scopes(&["admin"]))),
        );
        assert!(c.contains("error=\"insufficient_scope\""), "{c}");
        assert!(c.contains("missing scope: admin"), "{c}");
    }
}
