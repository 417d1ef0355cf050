//! A `private_key_jwt` client's private key (RFC 7523 §2.2), read and checked when the config is:
//! a missing or wrong key is a config error, reported by `config check`, not a failure at the
//! first connection. Signing is `jsonwebtoken`'s pure-Rust backend (no C build).
use std::path::Path;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use crate::SigningAlgorithm;

/// A client's private key, checked to fit its algorithm.
pub struct SigningKey {
    key: EncodingKey,
    algorithm: SigningAlgorithm,
}

fn jws_algorithm(algorithm: SigningAlgorithm) -> Algorithm {
    match algorithm {
        SigningAlgorithm::ES256 => Algorithm::ES256,
        SigningAlgorithm::ES384 => Algorithm::ES384,
        SigningAlgorithm::RS256 => Algorithm::RS256,
        SigningAlgorithm::RS384 => Algorithm::RS384,
        SigningAlgorithm::RS512 => Algorithm::RS512,
        SigningAlgorithm::PS256 => Algorithm::PS256,
        SigningAlgorithm::PS384 => Algorithm::PS384,
        SigningAlgorithm::PS512 => Algorithm::PS512,
        SigningAlgorithm::EdDSA => Algorithm::EdDSA,
    }
}

/// The key of an algorithm's family from PEM text; `None` when the PEM holds another kind.
fn family_key(pem: &[u8], algorithm: SigningAlgorithm) -> Option<EncodingKey> {
    match algorithm {
        SigningAlgorithm::ES256 | SigningAlgorithm::ES384 => EncodingKey::from_ec_pem(pem).ok(),
        SigningAlgorithm::EdDSA => EncodingKey::from_ed_pem(pem).ok(),
        _ => EncodingKey::from_rsa_pem(pem).ok(),
    }
}

/// Whether the key signs with the algorithm (an EC key parses for ES256 and ES384 alike, but
/// only signs with its own curve).
fn signs_with(key: &EncodingKey, algorithm: SigningAlgorithm) -> bool {
    jsonwebtoken::encode(
        &Header::new(jws_algorithm(algorithm)),
        &serde_json::json!({"probe": true}),
        key,
    )
    .is_ok()
}

impl SigningKey {
    /// Reads a PEM private key (PKCS#8, SEC1 or PKCS#1). With no algorithm configured, the first
    /// one the key signs with: ES256/ES384 by curve, RS256 for RSA, EdDSA for Ed25519.
    /// Errors name the config key, the file and the problem, never the key's contents.
    pub fn load(path: &Path, algorithm: Option<SigningAlgorithm>) -> Result<Self, String> {
        let shown = path.display();
        let pem = std::fs::read(path)
            .map_err(|e| format!("`auth.private_key_file`: cannot read {shown}: {e}"))?;
        if !String::from_utf8_lossy(&pem).contains("PRIVATE KEY-----") {
            return Err(format!(
                "`auth.private_key_file`: {shown} is not a PEM private key (expected a `-----BEGIN PRIVATE KEY-----` block)"
            ));
        }
        let candidates: Vec<SigningAlgorithm> = match algorithm {
            Some(a) => vec![a],
            None => vec![
                SigningAlgorithm::ES256,
                SigningAlgorithm::ES384,
                SigningAlgorithm::RS256,
                SigningAlgorithm::EdDSA,
            ],
        };
        for candidate in candidates {
            if let Some(key) = family_key(&pem, candidate)
                && signs_with(&key, candidate)
            {
                return Ok(SigningKey {
                    key,
                    algorithm: candidate,
                });
            }
        }
        Err(match algorithm {
            Some(a) => format!(
                "`auth.private_key_algorithm = \"{}\"` does not fit the key in {shown} (an ES256 key is EC P-256, ES384 EC P-384, RS*/PS* RSA, EdDSA Ed25519)",
                a.name()
            ),
            None => format!(
                "`auth.private_key_file`: the key in {shown} is unreadable or of an unsupported kind (supported: EC P-256/P-384, RSA, Ed25519)"
            ),
        })
    }

    pub fn algorithm(&self) -> SigningAlgorithm {
        self.algorithm
    }

    /// Signs claims as a compact JWS.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, String> {
        jsonwebtoken::encode(
            &Header::new(jws_algorithm(self.algorithm)),
            claims,
            &self.key,
        )
        .map_err(|_| format!("signing with the {} key failed", self.algorithm.name()))
    }
}
