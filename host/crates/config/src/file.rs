//! Reading one config file: rkmcp's TOML, or the JSON `mcpServers` (Claude Desktop, Cursor, …) and
//! `servers` (VS Code) forms, into the same [`RawConfig`].
//!
//! Errors carry the file, line and column and the key path, and suggest the nearest valid key
//! or value when the mistake looks like a typo.
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::ConfigError;
use super::raw::{RawConfig, RawServer};

/// The file formats rkmcp reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

impl Format {
    pub fn of(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Format::Json,
            _ => Format::Toml,
        }
    }
}

pub fn read(path: &Path) -> Result<RawConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|err| {
        ConfigError::new(format!("cannot read config file {}: {err}", path.display()))
    })?;
    parse(path, &text, Format::of(path))
}

pub fn parse(path: &Path, text: &str, format: Format) -> Result<RawConfig, ConfigError> {
    match format {
        Format::Toml => parse_toml(path, text),
        Format::Json => parse_json(path, text),
    }
}

fn parse_toml(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    let de = toml::Deserializer::parse(text).map_err(|err| {
        let (line, col) = err
            .span()
            .map(|s| line_col(text, s.start))
            .unwrap_or((1, 1));
        ConfigError::at(path, line, col, None, err.message().trim().to_string())
    })?;
    let mut raw = serde_path_to_error::deserialize::<_, RawConfig>(de).map_err(|err| {
        let key = err.path().to_string();
        let inner = err.into_inner();
        let (line, col) = inner
            .span()
            .map(|s| line_col(text, s.start))
            .unwrap_or((1, 1));
        ConfigError::at(path, line, col, Some(key), explain(inner.message()))
    })?;
    // Remember where each server entry is, for errors found after parsing.
    for (index, server) in raw.servers.iter_mut().enumerate() {
        server.line = toml_entry_position(text, index, server.name.as_deref());
    }
    Ok(raw)
}

/// The line naming server `name` (or the `index`-th `[[servers]]` header) in TOML text.
fn toml_entry_position(text: &str, index: usize, name: Option<&str>) -> Option<(usize, usize)> {
    if let Some(name) = name {
        for (i, line) in text.lines().enumerate() {
            let t = line.trim_start();
            if t.starts_with("name")
                && (t.contains(&format!("\"{name}\"")) || t.contains(&format!("'{name}'")))
            {
                return Some((i + 1, line.len() - t.len() + 1));
            }
        }
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("[[servers]]"))
        .nth(index)
        .map(|(i, _)| (i + 1, 1))
}

/// The JSON forms other MCP clients write. Unknown top-level keys (Claude Desktop keeps its own
/// settings in the same file) are ignored; unknown keys inside a server entry are reported.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonFile {
    #[serde(default)]
    mcp_servers: Option<BTreeMap<String, JsonServer>>,
    #[serde(default)]
    servers: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonServer {
    #[serde(default, rename = "type", alias = "transport")]
    kind: Option<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    command: Option<String>,
    #[serde(default, deserialize_with = "super::subst::strings")]
    args: Vec<String>,
    #[serde(default, deserialize_with = "super::subst::string_map")]
    env: BTreeMap<String, String>,
    #[serde(default, alias = "envFile")]
    env_file: Option<String>,
    #[serde(default, deserialize_with = "super::subst::opt_string")]
    cwd: Option<String>,
    #[serde(
        default,
        deserialize_with = "super::subst::opt_string",
        alias = "serverUrl"
    )]
    url: Option<String>,
    #[serde(default, deserialize_with = "super::subst::string_map")]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: Option<bool>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    timeout: Option<serde_json::Value>,
    // Fields other clients keep per server that have no meaning for rkmcp.
    #[serde(default, rename = "alwaysAllow")]
    _always_allow: Option<serde_json::Value>,
    #[serde(default, rename = "autoApprove")]
    _auto_approve: Option<serde_json::Value>,
    #[serde(default, rename = "description")]
    _description: Option<serde_json::Value>,
}

fn parse_json(path: &Path, text: &str) -> Result<RawConfig, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let file: JsonFile = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let key = err.path().to_string();
        let inner = err.into_inner();
        ConfigError::at(
            path,
            inner.line(),
            inner.column(),
            Some(key),
            explain(&strip_json_position(&inner.to_string())),
        )
    })?;
    let mut entries: Vec<(String, JsonServer)> = Vec::new();
    if let Some(servers) = file.mcp_servers {
        entries.extend(servers);
    }
    if let Some(servers) = file.servers {
        // VS Code's `servers` object; parse it the same way, with its own key path in errors.
        let map: BTreeMap<String, JsonServer> =
            serde_path_to_error::deserialize(servers).map_err(|err| {
                let key = format!("servers.{}", err.path());
                let (line, col) = find_key(text, key.rsplit('.').nth(1).unwrap_or("servers"));
                ConfigError::at(
                    path,
                    line,
                    col,
                    Some(key),
                    explain(&err.into_inner().to_string()),
                )
            })?;
        entries.extend(map);
    }
    if entries.is_empty() {
        return Err(ConfigError::at(
            path,
            1,
            1,
            None,
            "no `mcpServers` or `servers` object found (JSON configs use the Claude Desktop or VS Code form)".into(),
        ));
    }
    let servers = entries
        .into_iter()
        .map(|(name, s)| {
            let (line, col) = find_key(text, &name);
            let enabled = match (s.enabled, s.disabled) {
                (Some(e), _) => Some(e),
                (None, Some(d)) => Some(!d),
                (None, None) => None,
            };
            let request_timeout = match s.timeout {
                None => None,
                // Other clients write milliseconds as a number.
                Some(serde_json::Value::Number(n)) => Some(super::raw::RawDuration::Millis(
                    n.as_f64().unwrap_or(0.0),
                )),
                Some(serde_json::Value::String(s)) => Some(super::raw::RawDuration::Text(s)),
                Some(other) => {
                    return Err(ConfigError::at(
                        path,
                        line,
                        col,
                        Some(format!("mcpServers.{name}.timeout")),
                        format!("expected milliseconds or a duration like \"30s\", found {other}"),
                    ));
                }
            };
            if s.env_file.is_some() {
                tracing::warn!(target: rkmcp_term_safe::NOTICE_TARGET, server = %name, "`envFile` is not supported by rkmcp and is ignored; put the variables in `env` instead");
            }
            Ok(RawServer {
                name: Some(name),
                enabled,
                transport: s.kind,
                command: s.command,
                args: s.args,
                env: s.env,
                cwd: s.cwd,
                url: s.url,
                headers: s.headers,
                request_timeout,
                line: Some((line, col)),
                ..RawServer::default()
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RawConfig {
        servers,
        ..RawConfig::default()
    })
}

/// serde_json appends " at line L column C" to its messages; we print the position ourselves.
fn strip_json_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(pos) => msg[..pos].to_string(),
        None => msg.to_string(),
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.chars().count(), |nl| {
        before[nl + 1..].chars().count()
    }) + 1;
    (line, col)
}

/// Where `"key"` (JSON) first appears, for errors found after parsing.
fn find_key(text: &str, key: &str) -> (usize, usize) {
    let needle = format!("\"{key}\"");
    text.find(&needle)
        .map(|offset| line_col(text, offset))
        .unwrap_or((1, 1))
}

/// Adds "did you mean …?" to serde's unknown-field and unknown-variant messages.
pub fn explain(message: &str) -> String {
    let message = message.trim();
    for (marker, what) in [("unknown field `", "key"), ("unknown variant `", "value")] {
        let Some(start) = message.find(marker) else {
            continue;
        };
        let rest = &message[start + marker.len()..];
        let Some(end) = rest.find('`') else { continue };
        let unknown = &rest[..end];
        let expected: Vec<&str> = rest[end + 1..]
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 1)
            .map(|(_, s)| s)
            .collect();
        let mut out = format!("unknown {what} `{unknown}`");
        if let Some(best) = nearest(unknown, &expected) {
            out.push_str(&format!(" — did you mean `{best}`?"));
        }
        if !expected.is_empty() {
            out.push_str(&format!(" (valid: {})", expected.join(", ")));
        }
        return out;
    }
    message.to_string()
}

/// The candidate closest to `word`, if it is close enough to be a plausible typo.
pub fn nearest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let lower = word.to_lowercase();
    candidates
        .iter()
        .map(|c| (c, strsim::damerau_levenshtein(&lower, &c.to_lowercase())))
        .filter(|(c, d)| *d <= (c.len().max(word.len()) / 3).max(1) + 1 && *d < c.len())
        .min_by_key(|(_, d)| *d)
        .map(|(c, _)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_nearest_key() {
        let msg =
            explain("unknown field `comand`, expected one of `name`, `command`, `args`, `url`");
        assert!(msg.contains("did you mean `command`?"), "{msg}");
        assert!(msg.contains("valid: name, command, args, url"), "{msg}");
    }

    #[test]
    fn no_suggestion_for_unrelated_word() {
        let msg = explain("unknown field `zzzzzz`, expected `name` or `args`");
        assert!(!msg.contains("did you mean"), "{msg}");
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("a\nbc\n", 3), (2, 2));
        assert_eq!(line_col("abc", 0), (1, 1));
    }
}
