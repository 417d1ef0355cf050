//! `${VAR}` and `${VAR:-default}` substitution in config strings.
//!
//! Substitution happens while deserializing (see [`string`]), so a missing variable is reported by
//! the file format's own error machinery, with the file, line, column and key of the value.
use serde::{Deserialize, Deserializer};

/// Replaces `${VAR}` and `${VAR:-default}` using `lookup`. `$$` is a literal `$`.
/// A `$` not followed by `{` or `$` is kept as it is, so ordinary dollar signs need no escaping.
pub fn substitute(
    input: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, SubstError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body_start) = after.strip_prefix('{') {
            let Some(end) = body_start.find('}') else {
                return Err(SubstError::Unclosed(input.to_string()));
            };
            let body = &body_start[..end];
            let (name, default) = match body.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (body, None),
            };
            if name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || name.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(SubstError::BadName(body.to_string()));
            }
            match (lookup(name), default) {
                // `:-` means "unset or empty", as in the shell.
                (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
                (Some(value), _) => out.push_str(&value),
                (None, Some(default)) => out.push_str(default),
                (None, None) => return Err(SubstError::Missing(name.to_string())),
            }
            rest = &body_start[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubstError {
    #[error(
        "environment variable `{0}` is not set (set it, or give a default with `${{{0}:-default}}`)"
    )]
    Missing(String),
    #[error("`${{` without a closing `}}` in {0:?}")]
    Unclosed(String),
    #[error("`${{{0}}}` is not a valid variable reference (use letters, digits and `_`)")]
    BadName(String),
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// `deserialize_with` for a string with substitution.
pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let raw = String::deserialize(d)?;
    substitute(&raw, &env_lookup).map_err(serde::de::Error::custom)
}

/// `deserialize_with` for an optional string with substitution.
pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let raw = Option::<String>::deserialize(d)?;
    raw.map(|s| substitute(&s, &env_lookup).map_err(serde::de::Error::custom))
        .transpose()
}

/// `deserialize_with` for a list of strings with substitution.
pub fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let raw = Vec::<String>::deserialize(d)?;
    raw.into_iter()
        .map(|s| substitute(&s, &env_lookup).map_err(serde::de::Error::custom))
        .collect()
}

/// `deserialize_with` for a string map whose values get substitution.
pub fn string_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<std::collections::BTreeMap<String, String>, D::Error> {
    let raw = std::collections::BTreeMap::<String, String>::deserialize(d)?;
    raw.into_iter()
        .map(|(k, v)| {
            substitute(&v, &env_lookup)
                .map(|v| (k, v))
                .map_err(serde::de::Error::custom)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn replaces_set_variables_and_defaults() {
        assert_eq!(substitute("${HOME}/x", &env).unwrap(), "/home/u/x");
        assert_eq!(substitute("${NOPE:-/tmp}/x", &env).unwrap(), "/tmp/x");
        assert_eq!(substitute("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(substitute("${HOME:-d}", &env).unwrap(), "/home/u");
        assert_eq!(substitute("a${NOPE:-}b", &env).unwrap(), "ab");
    }

    #[test]
    fn keeps_plain_dollars_and_escapes() {
        assert_eq!(substitute("cost $5", &env).unwrap(), "cost $5");
        assert_eq!(substitute("$${HOME}", &env).unwrap(), "${HOME}");
        assert_eq!(substitute("end$", &env).unwrap(), "end$");
    }

    #[test]
    fn missing_variable_is_named() {
        let err = substitute("${API_TOKEN}", &env).unwrap_err();
        assert_eq!(err, SubstError::Missing("API_TOKEN".into()));
        assert!(err.to_string().contains("`API_TOKEN` is not set"));
    }

    #[test]
    fn malformed_references_are_errors() {
        assert!(matches!(
            substitute("${HOME", &env),
            Err(SubstError::Unclosed(_))
        ));
        assert!(matches!(
            substitute("${A B}", &env),
            Err(SubstError::BadName(_))
        ));
        assert!(matches!(
            substitute("${}", &env),
            Err(SubstError::BadName(_))
        ));
    }
}
