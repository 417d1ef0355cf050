//! `[servers.auth]`: how rkmcp signs in to a remote server, resolved and checked when the config
//! is loaded so that a wrong key file or a missing setting is reported by `config check`, with
//! the key's name, before any connection is tried.
use std::path::{Path, PathBuf};

use super::file::nearest;
use super::raw;

/// The OAuth grant a server is signed in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A person signs in in a browser (`rkmcp auth login`); tokens are stored and refreshed.
    #[default]
    AuthorizationCode,
    /// The client signs in as itself with its own credentials; no person, nothing stored.
    ClientCredentials,
    /// RFC 7523 JWT bearer grant with a JWT the platform issues to this workload (workload
    /// identity federation, SEP-1933), read from `assertion_file` or `assertion_env`.
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): the person's ID token is exchanged at the
    /// enterprise IdP (RFC 8693) for an ID-JAG, which the client presents to the server's
    /// authorization server (RFC 7523 JWT bearer grant).
    EnterpriseManaged,
}

const GRANTS: &[&str] = &[
    "authorization_code",
    "client_credentials",
    "jwt_bearer",
    "enterprise_managed",
];

/// How a confidential client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenEndpointAuth {
    ClientSecretBasic,
    ClientSecretPost,
    /// RFC 7523 §2.2: a JWT signed with the key in `private_key_file`.
    PrivateKeyJwt,
}

/// The JWS algorithm a `private_key_jwt` assertion is signed with (the key decides which fit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SigningAlgorithm {
    ES256,
    ES384,
    RS256,
    RS384,
    RS512,
    PS256,
    PS384,
    PS512,
    EdDSA,
}

impl SigningAlgorithm {
    pub const ALL: &[SigningAlgorithm] = &[
        SigningAlgorithm::ES256,
        SigningAlgorithm::ES384,
        SigningAlgorithm::RS256,
        SigningAlgorithm::RS384,
        SigningAlgorithm::RS512,
        SigningAlgorithm::PS256,
        SigningAlgorithm::PS384,
        SigningAlgorithm::PS512,
        SigningAlgorithm::EdDSA,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SigningAlgorithm::ES256 => "ES256",
            SigningAlgorithm::ES384 => "ES384",
            SigningAlgorithm::RS256 => "RS256",
            SigningAlgorithm::RS384 => "RS384",
            SigningAlgorithm::RS512 => "RS512",
            SigningAlgorithm::PS256 => "PS256",
            SigningAlgorithm::PS384 => "PS384",
            SigningAlgorithm::PS512 => "PS512",
            SigningAlgorithm::EdDSA => "EdDSA",
        }
    }

    fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .copied()
            .find(|a| a.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|a| a.name()).collect();
                format!(
                    "`auth.private_key_algorithm`: `{text}` is not a supported signing algorithm (valid: {})",
                    names.join(", ")
                )
            })
    }
}

/// `[servers.auth]`, resolved. Serializing never shows a secret, only whether one is set; key
/// files and assertions are named by path or variable and read only when signing in.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct AuthConfig {
    pub grant: Grant,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "secret_mask"
    )]
    pub client_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<TokenEndpointAuth>,
    /// The client's private key (PEM) for `private_key_jwt`, resolved against the config's folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<PathBuf>,
    /// The key's algorithm: as configured, else the one the key fits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_key_algorithm: Option<SigningAlgorithm>,
    /// A file holding the JWT the grant starts from (re-read at every sign-in: platforms rotate it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assertion_file: Option<PathBuf>,
    /// An environment variable holding that JWT (its name; the value is never stored here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assertion_env: Option<String>,
    /// `enterprise_managed`: the enterprise IdP's token endpoint (RFC 8693 token exchange).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_token_endpoint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idp_client_id: Option<String>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "secret_mask"
    )]
    pub idp_client_secret: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The environment variable's name; its value is read when connecting, never stored here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
}

fn secret_mask<S: serde::Serializer>(value: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(_) => s.serialize_str("***"),
        None => s.serialize_none(),
    }
}

fn env_name(key: &str, var: &str) -> Result<(), String> {
    if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "`auth.{key}` names an environment variable (e.g. \"MY_SERVER_TOKEN\"), not `{var}`"
        ));
    }
    Ok(())
}

/// Resolves `[servers.auth]`; `base` is the folder of the config file (for relative paths).
pub(super) fn resolve_auth(raw: &raw::RawAuth, base: &Path) -> Result<AuthConfig, String> {
    let grant = match raw.grant.as_deref() {
        None | Some("authorization_code") => Grant::AuthorizationCode,
        Some("client_credentials") => Grant::ClientCredentials,
        Some("jwt_bearer") => Grant::JwtBearer,
        Some("enterprise_managed") => Grant::EnterpriseManaged,
        Some(other) => {
            let hint = nearest(other, GRANTS)
                .map(|g| format!(" — did you mean `{g}`?"))
                .unwrap_or_default();
            return Err(format!(
                "`auth.grant`: unknown grant `{other}`{hint} (valid: {})",
                GRANTS.join(", ")
            ));
        }
    };
    let mut token_endpoint_auth_method = match raw.token_endpoint_auth_method.as_deref() {
        None => None,
        Some("client_secret_basic") => Some(TokenEndpointAuth::ClientSecretBasic),
        Some("client_secret_post") => Some(TokenEndpointAuth::ClientSecretPost),
        Some("private_key_jwt") => Some(TokenEndpointAuth::PrivateKeyJwt),
        Some(other) => {
            return Err(format!(
                "`auth.token_endpoint_auth_method`: `{other}` is not supported (valid: client_secret_basic, client_secret_post, private_key_jwt)"
            ));
        }
    };
    if raw.client_secret.is_some() && raw.client_id.is_none() {
        return Err(
            "`auth.client_secret` needs `auth.client_id` (the client the secret belongs to)".into(),
        );
    }
    let private_key_file = raw.private_key_file.as_ref().map(|p| base.join(p));
    let mut private_key_algorithm = match raw.private_key_algorithm.as_deref() {
        Some(text) => Some(SigningAlgorithm::parse(text)?),
        None => None,
    };
    match (&private_key_file, token_endpoint_auth_method) {
        (Some(path), None | Some(TokenEndpointAuth::PrivateKeyJwt)) => {
            if raw.client_id.is_none() {
                return Err(
                    "`auth.private_key_file` needs `auth.client_id` (the client the key belongs to)"
                        .into(),
                );
            }
            if raw.client_secret.is_some() {
                return Err("set either `auth.client_secret` or `auth.private_key_file`, not both (which one should rkmcp authenticate with?)".into());
            }
            // Read and parse now: a missing or wrong key is a config error, reported by
            // `config check`, not a failure at the first connection.
            let key = crate::SigningKey::load(path, private_key_algorithm)?;
            private_key_algorithm = Some(key.algorithm());
            token_endpoint_auth_method = Some(TokenEndpointAuth::PrivateKeyJwt);
        }
        (None, Some(TokenEndpointAuth::PrivateKeyJwt)) => {
            return Err("`auth.token_endpoint_auth_method = \"private_key_jwt\"` needs `auth.private_key_file` (the client's private key, PEM)".into());
        }
        (Some(_), Some(_)) => {
            return Err("`auth.private_key_file` is for `token_endpoint_auth_method = \"private_key_jwt\"`; remove one of them".into());
        }
        (None, _) if private_key_algorithm.is_some() => {
            return Err("`auth.private_key_algorithm` needs `auth.private_key_file`".into());
        }
        (None, _) => {}
    }
    let has_secret = raw.client_secret.is_some() || private_key_file.is_some();
    if grant == Grant::ClientCredentials && (raw.client_id.is_none() || !has_secret) {
        return Err(
            "`auth.grant = \"client_credentials\"` needs `auth.client_id` and `auth.client_secret` (or `auth.private_key_file`)"
                .into(),
        );
    }
    let assertion_file = raw.assertion_file.as_ref().map(|p| base.join(p));
    if let Some(var) = &raw.assertion_env {
        env_name("assertion_env", var)?;
    }
    let wants_assertion = matches!(grant, Grant::JwtBearer | Grant::EnterpriseManaged);
    match (assertion_file.is_some(), raw.assertion_env.is_some()) {
        (true, true) => {
            return Err(
                "set either `auth.assertion_file` or `auth.assertion_env`, not both".into(),
            );
        }
        (false, false) if wants_assertion => {
            return Err(format!(
                "`auth.grant = \"{}\"` needs `auth.assertion_file` or `auth.assertion_env` ({})",
                if grant == Grant::JwtBearer {
                    "jwt_bearer"
                } else {
                    "enterprise_managed"
                },
                if grant == Grant::JwtBearer {
                    "the JWT your platform issues to this workload"
                } else {
                    "your ID token from the enterprise identity provider"
                }
            ));
        }
        (true, _) | (_, true) if !wants_assertion => {
            return Err("`auth.assertion_file` / `auth.assertion_env` are for `grant = \"jwt_bearer\"` or `\"enterprise_managed\"`".into());
        }
        _ => {}
    }
    let idp_keys = raw.idp_token_endpoint.is_some()
        || raw.idp_client_id.is_some()
        || raw.idp_client_secret.is_some();
    if grant == Grant::EnterpriseManaged {
        let Some(endpoint) = &raw.idp_token_endpoint else {
            return Err("`auth.grant = \"enterprise_managed\"` needs `auth.idp_token_endpoint` (the identity provider's token endpoint)".into());
        };
        if !(endpoint.starts_with("https://") || endpoint.starts_with("http://")) {
            return Err(format!(
                "`auth.idp_token_endpoint` must be an http(s) URL, not `{endpoint}`"
            ));
        }
        if raw.client_id.is_none() {
            return Err("`auth.grant = \"enterprise_managed\"` needs `auth.client_id` (rkmcp's client at the server's authorization server)".into());
        }
        if raw.idp_client_secret.is_some() && raw.idp_client_id.is_none() {
            return Err("`auth.idp_client_secret` needs `auth.idp_client_id`".into());
        }
    } else if idp_keys {
        return Err(
            "`auth.idp_token_endpoint`, `idp_client_id` and `idp_client_secret` are for `grant = \"enterprise_managed\"`"
                .into(),
        );
    }
    if let Some(url) = &raw.client_metadata_url
        && !url.starts_with("https://")
    {
        return Err(format!(
            "`auth.client_metadata_url` must be an https:// URL (it is the client's identity), not `{url}`"
        ));
    }
    if let Some(var) = &raw.bearer_token_env {
        env_name("bearer_token_env", var)?;
    }
    Ok(AuthConfig {
        grant,
        client_id: raw.client_id.clone(),
        client_secret: raw.client_secret.clone(),
        token_endpoint_auth_method,
        private_key_file,
        private_key_algorithm,
        assertion_file,
        assertion_env: raw.assertion_env.clone(),
        idp_token_endpoint: raw.idp_token_endpoint.clone(),
        idp_client_id: raw.idp_client_id.clone(),
        idp_client_secret: raw.idp_client_secret.clone(),
        client_metadata_url: raw.client_metadata_url.clone(),
        scopes: raw.scopes.clone(),
        bearer_token_env: raw.bearer_token_env.clone(),
    })
}
