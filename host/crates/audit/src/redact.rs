//! What never reaches the audit log: values under secret-looking keys (configurable globs such as
//! `*password*`, `*token*`, `*secret*`) and any occurrence of a secret rkmcp knows from its
//! config (server env values, header values, URL passwords, secret command-line flags), wherever
//! it appears — a server that echoes a token back in a result does not get it logged either.
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::Value;

use rkmcp_config::ServerConfig;

pub const REDACTED: &str = "[redacted]";

/// Key patterns redacted when `[audit] redact_keys` is not set.
pub const DEFAULT_KEYS: &[&str] = &[
    "*password*",
    "*passwd*",
    "*secret*",
    "*token*",
    "*api_key*",
    "*apikey*",
    "*api-key*",
    "*authorization*",
    "*cookie*",
    "*credential*",
    "*private_key*",
];

/// MCP's own fields that match the default patterns but never hold a secret.
const PROTOCOL_KEYS: &[&str] = &["progressToken", "maxTokens"];

/// Config values shorter than this are not searched for (`DEBUG=1` must not blank every `1`).
const MIN_SECRET_LEN: usize = 4;

pub struct Redactor {
    keys: GlobSet,
    /// Longest first, so a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    pub fn new(key_globs: &[String], secrets: Vec<String>) -> Result<Redactor, String> {
        let mut builder = GlobSetBuilder::new();
        for pattern in key_globs {
            let glob = GlobBuilder::new(pattern)
                .case_insensitive(true)
                .build()
                .map_err(|e| {
                    format!("`{pattern}` in `audit.redact_keys` is not a valid glob: {e}")
                })?;
            builder.add(glob);
        }
        let keys = builder
            .build()
            .map_err(|e| format!("`audit.redact_keys`: {e}"))?;
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Ok(Redactor { keys, secrets })
    }

    pub fn secret_key(&self, key: &str) -> bool {
        !PROTOCOL_KEYS.contains(&key) && self.keys.is_match(key)
    }

    /// Redacts in place.
    pub fn value(&self, value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    if self.secret_key(key) && !v.is_null() {
                        *v = Value::String(REDACTED.into());
                    } else {
                        self.value(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.value(v)),
            Value::String(s) => {
                if let Some(clean) = self.text(s) {
                    *s = clean;
                }
            }
            _ => {}
        }
    }

    /// `text` with known secrets replaced, or `None` when it holds none.
    pub fn text(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for secret in &self.secrets {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(secret.as_str()) {
                out = Some(current.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }
}

/// Every secret value in the servers' config.
pub fn config_secrets(servers: &[ServerConfig]) -> Vec<String> {
    let mut out = Vec::new();
    for server in servers {
        out.extend(server.env.values().cloned());
        for value in server.headers.values() {
            out.push(value.clone());
            if let Some((_scheme, credential)) = value.split_once(' ') {
                out.push(credential.trim().to_string());
            }
        }
        if let Some(url) = &server.url
            && let Some((_, rest)) = url.split_once("://")
            && let Some((userinfo, _)) = rest.split_once('@')
        {
            out.push(userinfo.to_string());
            if let Some((_, password)) = userinfo.split_once(':') {
                out.push(password.to_string());
            }
        }
        // The values config display masks (`--token X`, `--api-key=X`).
        let masked = rkmcp_config::Config {
            servers: vec![server.clone()],
            ..Default::default()
        }
        .masked();
        for (plain, masked) in server.args.iter().zip(&masked.servers[0].args) {
            if plain != masked {
                out.push(
                    plain
                        .split_once('=')
                        .map_or(plain.as_str(), |(_, v)| v)
                        .to_string(),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor() -> Redactor {
        let keys: Vec<String> = DEFAULT_KEYS.iter().map(|s| s.to_string()).collect();
        Redactor::new(&keys, vec!["hunter22".into(), "x".into()]).unwrap()
    }

    #[test]
    fn keys_and_known_values_are_redacted() {
        let mut v = json!({
            "params": {
                "arguments": {"Password": "pw1", "db": {"api_key": "k"}, "note": "uses hunter22 here", "x": "x"},
                "_meta": {"progressToken": "rkmcp-1"},
                "maxTokens": 100,
            }
        });
        redactor().value(&mut v);
        let text = v.to_string();
        assert!(
            !text.contains("pw1") && !text.contains("\"k\"") && !text.contains("hunter22"),
            "{text}"
        );
        assert!(text.contains("uses [redacted] here"), "{text}");
        assert!(text.contains("rkmcp-1") && text.contains("100"), "{text}");
        // Short config values are left alone.
        assert!(text.contains("\"x\":\"x\""), "{text}");
    }
}
