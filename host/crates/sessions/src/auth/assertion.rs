//! Signed JWTs the client makes itself: RFC 7523 §2.2 client assertions (`private_key_jwt`).
//! The key is the config's [`SigningKey`] (checked when the config is read); signing is
//! `jsonwebtoken`'s pure-Rust backend (no C build, unlike rmcp's `auth-client-credentials-jwt`,
//! which pulls aws-lc-sys).
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use rkmcp_config::SigningKey;

/// The `client_assertion_type` of RFC 7523 §2.2.
pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid: long enough for clock skew, short enough not to be worth
/// stealing (it is single-use by its `jti` anyway).
const ASSERTION_LIFETIME_SECS: u64 = 300;

/// RFC 7523 §3 claims of a client assertion.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct ClientAssertionClaims {
    /// The client ID, as issuer and subject (§3 items 1 and 2).
    pub iss: String,
    pub sub: String,
    /// The authorization server (its issuer identifier; §3 item 3).
    pub aud: String,
    pub jti: String,
    pub iat: u64,
    pub exp: u64,
}

impl ClientAssertionClaims {
    pub fn new(client_id: &str, audience: &str, now: u64, jti: String) -> Self {
        ClientAssertionClaims {
            iss: client_id.to_string(),
            sub: client_id.to_string(),
            aud: audience.to_string(),
            jti,
            iat: now,
            exp: now + ASSERTION_LIFETIME_SECS,
        }
    }
}

/// A fresh client assertion for `client_id` at the authorization server `audience`.
pub fn client_assertion(
    key: &SigningKey,
    client_id: &str,
    audience: &str,
) -> Result<String, String> {
    let claims = ClientAssertionClaims::new(
        client_id,
        audience,
        unix_now(),
        uuid::Uuid::new_v4().to_string(),
    );
    key.sign(&claims)
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use jsonwebtoken::{Algorithm, DecodingKey, Validation};
    use rkmcp_config::SigningAlgorithm;
    use std::path::Path;

    // Test-only keys (generated with `openssl genpkey`), used nowhere else.
    pub const P256: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgt2JQ+I5zJorCGY/r
pOHLYAj0VRXF41CoNKqQ+ed0EO+hRANCAAS90izG5aLQLAK6d5gFOdSvEYSyAm4M
TdVtafT2Wd0V1petIpPsf4DijT8T7Ifzb9JWaAAvrGs+fFVgYqYqTFyf
-----END PRIVATE KEY-----
";
    const P256_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEvdIsxuWi0CwCuneYBTnUrxGEsgJu
DE3VbWn09lndFdaXrSKT7H+A4o0/E+yH82/SVmgAL6xrPnxVYGKmKkxcnw==
-----END PUBLIC KEY-----
";
    const P384: &str = "-----BEGIN PRIVATE KEY-----
MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDCWLc6UadA2S+zVTv1g
ojAtwWGaRiSBkwBH+zJhcrGiwHthlrdLRSvHYuKHHap9/cyhZANiAAQhFqrgT8N/
eZyq2C7i8KB18ZvlB3bY7lAtI1q0h99VzDug0PtqWvc2Tx3+TEe9jjpWjTp1H4s5
E1TU+Dz9PCjr/6EfPapMY3an1fGXlVF7oDQRJdlXq/NkmtPKxACqpV8=
-----END PRIVATE KEY-----
";
    const ED25519: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIA4rYKqy6Ie6st7t+7uCQISCkPg2aQ+LMsLUj4CTSFRw
-----END PRIVATE KEY-----
";

    fn key_file(pem: &str) -> tempfile::NamedTempFile {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(pem.as_bytes()).unwrap();
        f
    }

    #[test]
    fn the_algorithm_comes_from_the_key() {
        for (pem, expected) in [
            (P256, SigningAlgorithm::ES256),
            (P384, SigningAlgorithm::ES384),
            (ED25519, SigningAlgorithm::EdDSA),
        ] {
            let f = key_file(pem);
            assert_eq!(
                SigningKey::load(f.path(), None).unwrap().algorithm(),
                expected
            );
        }
    }

    #[test]
    fn key_problems_name_the_key_and_the_file() {
        let missing = SigningKey::load(Path::new("/nonexistent/key.pem"), None)
            .err()
            .unwrap();
        assert!(missing.starts_with("`auth.private_key_file`: cannot read /nonexistent/key.pem"));
        let not_pem = key_file("hello");
        let err = SigningKey::load(not_pem.path(), None).err().unwrap();
        assert!(err.contains("is not a PEM private key"), "{err}");
        let p256 = key_file(P256);
        let err = SigningKey::load(p256.path(), Some(SigningAlgorithm::ES384))
            .err()
            .unwrap();
        assert!(
            err.starts_with("`auth.private_key_algorithm = \"ES384\"` does not fit the key"),
            "{err}"
        );
        let err = SigningKey::load(p256.path(), Some(SigningAlgorithm::RS256))
            .err()
            .unwrap();
        assert!(err.contains("does not fit"), "{err}");
        // The key never appears in a message.
        assert!(!err.contains("MIGHAgEA"));
    }

    #[test]
    fn a_client_assertion_has_rfc_7523_claims_and_verifies() {
        let f = key_file(P256);
        let key = SigningKey::load(f.path(), None).unwrap();
        let jwt = client_assertion(&key, "my-client", "https://as.example.com").unwrap();
        let mut validation = Validation::new(Algorithm::ES256);
        validation.set_audience(&["https://as.example.com"]);
        validation.set_issuer(&["my-client"]);
        validation.set_required_spec_claims(&["exp", "iat", "aud", "iss", "sub", "jti"]);
        let decoded = jsonwebtoken::decode::<serde_json::Value>(
            &jwt,
            &DecodingKey::from_ec_pem(P256_PUBLIC.as_bytes()).unwrap(),
            &validation,
        )
        .unwrap();
        let claims = decoded.claims;
        assert_eq!(claims["sub"], "my-client");
        let iat = claims["iat"].as_u64().unwrap();
        assert!(iat.abs_diff(unix_now()) < 5);
        assert_eq!(
            claims["exp"].as_u64().unwrap(),
            iat + ASSERTION_LIFETIME_SECS
        );
        // A fresh jti each time: an authorization server may refuse a replayed one.
        let again = client_assertion(&key, "my-client", "https://as.example.com").unwrap();
        let jti = |t: &str| {
            jsonwebtoken::dangerous::insecure_decode::<serde_json::Value>(t)
                .unwrap()
                .claims["jti"]
                .clone()
        };
        assert_ne!(jti(&jwt), jti(&again));
    }
}
