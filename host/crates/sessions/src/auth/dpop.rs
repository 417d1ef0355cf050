//! DPoP (RFC 9449, the MCP DPoP extension SEP-1932): access tokens bound to a key only this
//! client holds, so a stolen token is useless without it.
//!
//! When an authorization server advertises ES256 in `dpop_signing_alg_values_supported`, the
//! sign-in makes a fresh P-256 key, sends a proof of it with every token request (through
//! [`TokenEndpointProofs`], an rmcp OAuth HTTP client), and gets a `DPoP` token bound to the
//! key's thumbprint. Every request to the MCP server then carries `Authorization: DPoP <token>`
//! and a new proof for that method and URL with the token's hash (`ath`).
//!
//! Servers may demand a nonce (RFC 9449 §8 and §9): they answer `use_dpop_nonce` with a
//! `DPoP-Nonce` header, and the request is retried once with it in the proof. Nonces are kept
//! per origin, since the authorization server and the MCP server each issue their own.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use oauth2::http;
use rmcp::transport::auth::{
    AuthorizationMetadata, OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture,
    OAuthHttpRequest,
};
use serde::Serialize;
use sha2::{Digest, Sha256};

/// The only proof algorithm rkmcp signs with; every DPoP server must accept it in practice
/// (it is the one RFC 9449's examples and the MCP extension use).
pub const PROOF_ALGORITHM: &str = "ES256";
/// The response header carrying a server-supplied nonce.
pub const NONCE_HEADER: &str = "DPoP-Nonce";
/// The error code a server answers when a proof lacks its current nonce.
pub const USE_NONCE: &str = "use_dpop_nonce";

/// Whether to ask for DPoP-bound tokens: only when both sides take them. The authorization
/// server advertises ES256 proofs, and the MCP server's `WWW-Authenticate` (`challenge`, from
/// its 401) offers the `DPoP` scheme. An authorization server may offer DPoP to every client
/// (oidc-provider does by default) while the MCP server behind it accepts only `Bearer`; a
/// DPoP token would then be refused on every request.
pub fn both_sides_take_it(metadata: &AuthorizationMetadata, challenge: Option<&str>) -> bool {
    advertised(metadata) && challenge.is_some_and(offers_dpop_scheme)
}

pub use super::challenge::offers_dpop_scheme;

/// Whether the authorization server issues DPoP-bound tokens for proofs rkmcp can sign.
pub fn advertised(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(|v| v.as_array())
        .is_some_and(|algs| algs.iter().any(|a| a.as_str() == Some(PROOF_ALGORITHM)))
}

/// A proof key: a P-256 key made for one sign-in, with the nonces servers gave for it.
pub struct DpopKey {
    /// PKCS#8 PEM, for the token store (a stored sign-in refreshes with the same key).
    pem: String,
    key: EncodingKey,
    /// The public half, as the proof's `jwk` header carries it.
    jwk: Jwk,
    /// The last nonce each origin (`scheme://host:port`) supplied.
    nonces: Mutex<HashMap<String, String>>,
}

/// RFC 9449 §4.2 claims of a proof.
#[derive(Debug, Serialize)]
struct ProofClaims<'a> {
    jti: String,
    htm: &'a str,
    htu: String,
    iat: u64,
    /// base64url(SHA-256(access token)), on requests that carry a token (§4.2, §7).
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
}

impl DpopKey {
    /// A new key from the operating system's randomness.
    pub fn generate() -> Result<Self, String> {
        use p256::pkcs8::{EncodePrivateKey, LineEnding};
        let secret = p256::SecretKey::random(&mut rand_core::OsRng);
        let pem = secret
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|_| "could not encode the new DPoP key".to_string())?;
        Self::from_pem(&pem)
    }

    /// The key [`DpopKey::pem`] gave (from the token store). Errors never show the key.
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        let key = EncodingKey::from_ec_pem(pem.as_bytes())
            .map_err(|_| "the stored DPoP key is not an EC private key".to_string())?;
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)
            .map_err(|_| "the stored DPoP key is not a P-256 key".to_string())?;
        Ok(DpopKey {
            pem: pem.to_string(),
            key,
            jwk,
            nonces: Mutex::new(HashMap::new()),
        })
    }

    /// The private key as PKCS#8 PEM, for the token store only.
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A proof for one request: `method` and `url` as sent (the query and fragment are left
    /// out of `htu`, §4.2), `access_token` when the request carries one.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("DPoP proof for `{url}`: {e}"))?;
        let mut htu = parsed.clone();
        htu.set_query(None);
        htu.set_fragment(None);
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let claims = ProofClaims {
            jti: uuid::Uuid::new_v4().to_string(),
            htm: method,
            htu: htu.to_string(),
            iat,
            ath: access_token.map(token_hash),
            nonce: self.nonce_for(&parsed),
        };
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|_| "signing the DPoP proof failed".to_string())
    }

    /// Remembers the nonce a server at `url`'s origin supplied, for the following proofs.
    pub fn remember_nonce(&self, url: &str, nonce: &str) {
        if let Ok(parsed) = url::Url::parse(url)
            && let Ok(mut nonces) = self.nonces.lock()
        {
            nonces.insert(origin(&parsed), nonce.to_string());
        }
    }

    fn nonce_for(&self, url: &url::Url) -> Option<String> {
        self.nonces.lock().ok()?.get(&origin(url)).cloned()
    }
}

fn origin(url: &url::Url) -> String {
    url.origin().ascii_serialization()
}

/// `ath`: the access token's SHA-256, base64url without padding (RFC 9449 §4.2).
pub fn token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// Whether a stored token response is DPoP-bound (its `token_type`, RFC 9449 §5).
pub fn is_dpop_token_type(token_type: &str) -> bool {
    token_type.eq_ignore_ascii_case("dpop")
}

/// Whether a challenge or error body asks for a nonce.
pub fn asks_for_nonce(text: &str) -> bool {
    text.contains(USE_NONCE)
}

/// rmcp's OAuth HTTP client with a DPoP proof on every token endpoint request (the code
/// exchange and each refresh), retried once with the authorization server's nonce when it
/// asks for one. Every other request (discovery, registration) goes to `inner` unchanged; all
/// of them go through the guarded client (fetch policy, size and time limits).
pub struct TokenEndpointProofs {
    inner: Arc<super::guarded_http::GuardedHttp>,
    token_endpoint: String,
    key: Arc<DpopKey>,
}

impl TokenEndpointProofs {
    pub fn new(
        inner: Arc<super::guarded_http::GuardedHttp>,
        token_endpoint: &str,
        key: Arc<DpopKey>,
    ) -> Result<Self, String> {
        Ok(TokenEndpointProofs {
            inner,
            token_endpoint: token_endpoint.to_string(),
            key,
        })
    }

    async fn send_with_proof(
        &self,
        request: &http::Request<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let proof = self.key.proof("POST", &self.token_endpoint, None)?;
        // Token endpoints answer directly; a redirect there would leak the code.
        let mut builder = self
            .inner
            .post(&request.uri().to_string())
            .header("DPoP", proof)
            .body(request.body().clone());
        for (name, value) in request.headers() {
            builder = builder.header(name.as_str(), value.as_bytes());
        }
        let answer = self.inner.send(builder).await?;
        let mut response = http::Response::builder().status(answer.status.as_u16());
        for (name, value) in &answer.headers {
            response = response.header(name.as_str(), value.as_bytes());
        }
        Ok(response.body(answer.body)?)
    }
}

impl OAuthHttpClient for TokenEndpointProofs {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        let to_token_endpoint = request.request.method() == http::Method::POST
            && same_endpoint(&request.request.uri().to_string(), &self.token_endpoint);
        if !to_token_endpoint {
            return self.inner.execute(request);
        }
        Box::pin(async move {
            let first = self.send_with_proof(&request.request).await?;
            let Some(nonce) = first
                .headers()
                .get(NONCE_HEADER)
                .and_then(|v| v.to_str().ok())
            else {
                return Ok(first);
            };
            self.key.remember_nonce(&self.token_endpoint, nonce);
            // §8: a 400 `use_dpop_nonce` is answered once with the nonce; a nonce on a success
            // is only kept for next time.
            if first.status() == http::StatusCode::BAD_REQUEST
                && asks_for_nonce(&String::from_utf8_lossy(first.body()))
            {
                return self.send_with_proof(&request.request).await;
            }
            Ok(first)
        })
    }
}

/// Whether two endpoint URLs name the same endpoint (a trailing slash aside).
fn same_endpoint(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};

    fn verify(proof: &str) -> serde_json::Value {
        let header = decode_header(proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        assert_eq!(header.alg, Algorithm::ES256);
        let jwk = header.jwk.expect("the proof carries its public key");
        let public = DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        decode::<serde_json::Value>(proof, &public, &validation)
            .expect("the proof verifies with the key in its header")
            .claims
    }

    #[test]
    fn a_proof_verifies_with_its_own_key_and_names_the_request() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof("POST", "https://mcp.example.com/mcp?x=1#f", Some("tok"))
            .unwrap();
        let claims = verify(&proof);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(claims["ath"], token_hash("tok"));
        assert!(claims.get("nonce").is_none());
        let jwk = serde_json::to_value(decode_header(&proof).unwrap().jwk).unwrap();
        assert!(
            jwk.get("d").is_none(),
            "the private key never leaves: {jwk}"
        );
    }

    #[test]
    fn a_stored_key_proves_the_same_key() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_pem(key.pem()).unwrap();
        let jwk = |k: &DpopKey| {
            decode_header(k.proof("GET", "https://a.example/", None).unwrap())
                .unwrap()
                .jwk
        };
        assert_eq!(jwk(&key), jwk(&again));
        let err =
            DpopKey::from_pem("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n")
                .err()
                .unwrap();
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn every_proof_is_fresh() {
        let key = DpopKey::generate().unwrap();
        let a = verify(&key.proof("POST", "https://a.example/token", None).unwrap());
        let b = verify(&key.proof("POST", "https://a.example/token", None).unwrap());
        assert_ne!(a["jti"], b["jti"]);
        assert!(a.get("ath").is_none());
    }

    #[test]
    fn a_nonce_is_sent_only_to_the_origin_that_gave_it() {
        let key = DpopKey::generate().unwrap();
        key.remember_nonce("https://as.example/token", "n-1");
        let to_as = verify(&key.proof("POST", "https://as.example/other", None).unwrap());
        let to_rs = verify(&key.proof("POST", "https://rs.example/mcp", None).unwrap());
        assert_eq!(to_as["nonce"], "n-1");
        assert!(to_rs.get("nonce").is_none());
    }

    #[test]
    fn the_token_hash_is_rfc_9449s_example() {
        // RFC 9449 §7.1: the access token "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU" has
        // ath "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo".
        assert_eq!(
            token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn the_dpop_scheme_is_found_among_challenges() {
        assert!(offers_dpop_scheme(
            r#"DPoP resource_metadata="https://x/.well-known""#
        ));
        assert!(offers_dpop_scheme(r#"Bearer realm="x", DPoP algs="ES256""#));
        assert!(offers_dpop_scheme("dpop"));
        assert!(!offers_dpop_scheme(
            r#"Bearer error="invalid_token", dpop="x""#
        ));
        assert!(!offers_dpop_scheme(
            r#"Bearer resource_metadata="https://dpop.example/""#
        ));
    }

    #[test]
    fn only_es256_servers_get_proofs() {
        let mut metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
            "authorization_endpoint": "https://as.example/authorize",
            "token_endpoint": "https://as.example/token",
        }))
        .unwrap();
        assert!(!advertised(&metadata));
        metadata.additional_fields.insert(
            "dpop_signing_alg_values_supported".into(),
            serde_json::json!(["RS256"]),
        );
        assert!(!advertised(&metadata));
        metadata.additional_fields.insert(
            "dpop_signing_alg_values_supported".into(),
            serde_json::json!(["RS256", "ES256"]),
        );
        assert!(advertised(&metadata));
    }
}
