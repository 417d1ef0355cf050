//! `NAME.toml` beside `NAME.wasm`: a description, the capabilities the plugin *requests* and
//! its default config. A manifest never grants anything; it only lets `rkmcp plugins` tell the
//! user what to grant.
use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::FileMode;

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Manifest {
    pub description: Option<String>,
    /// Free-form, e.g. the format a detector understands.
    pub version: Option<String>,
    pub requests: Requests,
    /// Default config values (the user's grant overrides them key by key).
    pub config: BTreeMap<String, toml::Value>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Requests {
    pub files: Vec<RequestedFiles>,
    pub network: Vec<String>,
    pub env: Vec<String>,
    pub memory_mb: Option<u64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RequestedFiles {
    pub guest: String,
    #[serde(default)]
    pub mode: FileMode,
    /// Why the plugin wants it.
    pub why: Option<String>,
}

/// Largest manifest read; a manifest is a few lines.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024;

/// Reads the manifest beside `wasm` if there is one.
///
/// A manifest is read only if it really is a file of the plugin folder: a symbolic link to a
/// file outside the folder is refused (otherwise `plugins list` would read any file the user
/// can read, such as a `.env`), and so is anything that is not a regular file (a FIFO would
/// block). A parse error gives the position and the parser's message, never the text of the
/// line, because the file may not be a manifest at all.
pub fn load_beside(wasm: &Path) -> anyhow::Result<Option<Manifest>> {
    let path = wasm.with_extension("toml");
    let link = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("cannot read plugin manifest {}: {e}", path.display()),
    };
    if link.file_type().is_symlink() {
        let folder = wasm
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .unwrap_or_default();
        match std::fs::canonicalize(&path) {
            Ok(target) if target.parent() == Some(folder.as_path()) => {}
            _ => anyhow::bail!(
                "plugin manifest {} is a symbolic link that leaves the plugin folder; copy the manifest into the folder instead",
                path.display()
            ),
        }
    }
    let meta = std::fs::metadata(&path)
        .map_err(|e| anyhow::anyhow!("cannot read plugin manifest {}: {e}", path.display()))?;
    if !meta.is_file() {
        anyhow::bail!("plugin manifest {} is not a regular file", path.display());
    }
    if meta.len() > MAX_MANIFEST_BYTES {
        anyhow::bail!(
            "plugin manifest {} is {} bytes; a manifest may be at most {MAX_MANIFEST_BYTES}",
            path.display(),
            meta.len()
        );
    }
    let bytes = std::fs::read(&path)
        .map_err(|e| anyhow::anyhow!("cannot read plugin manifest {}: {e}", path.display()))?;
    let Ok(text) = String::from_utf8(bytes) else {
        anyhow::bail!("plugin manifest {} is not UTF-8 text", path.display());
    };
    let mut manifest =
        parse(&text).map_err(|e| anyhow::anyhow!("plugin manifest {}: {e}", path.display()))?;
    // Shown by `rkmcp plugins`: the plugin author's text must not drive the terminal.
    let clean = |s: &mut Option<String>| {
        if let Some(t) = s.take() {
            *s = Some(rkmcp_term_safe::sanitized(t));
        }
    };
    clean(&mut manifest.description);
    clean(&mut manifest.version);
    for f in &mut manifest.requests.files {
        clean(&mut f.why);
        f.guest = rkmcp_term_safe::sanitized_inline(std::mem::take(&mut f.guest));
    }
    for s in manifest
        .requests
        .network
        .iter_mut()
        .chain(manifest.requests.env.iter_mut())
    {
        *s = rkmcp_term_safe::sanitized_inline(std::mem::take(s));
    }
    Ok(Some(manifest))
}

/// Parses a manifest; the error says where and what, without quoting the text.
pub fn parse(text: &str) -> Result<Manifest, String> {
    toml::from_str(text).map_err(|e| {
        let message =
            rkmcp_term_safe::sanitize_inline(&without_values(e.message().trim())).into_owned();
        match e.span() {
            Some(span) => {
                let (line, column) = line_column(text, span.start);
                format!("line {line}, column {column}: {message}")
            }
            None => message,
        }
    })
}

/// serde's type errors quote the value (`invalid type: string "...", expected ...`); a value
/// is content of the file, so it is left out.
fn without_values(message: &str) -> String {
    for kind in ["invalid type: string \"", "invalid value: string \""] {
        if let Some(at) = message.find(kind)
            && let Some(end) = message.rfind("\", expected")
            && end >= at + kind.len()
        {
            let head = &message[..at + kind.len() - "string \"".len()];
            return format!("{head}a string{}", &message[end + 1..]);
        }
    }
    message.to_string()
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parse_error_names_the_place_not_the_text() {
        let e = parse("description = \"ok\"\nAPI_KEY=sk-live-123456\n").unwrap_err();
        assert!(!e.contains("sk-live"), "{e}");
        assert!(e.starts_with("line 2, column"), "{e}");
    }

    #[test]
    fn type_errors_leave_out_the_value() {
        let e = parse("[requests]\nmemory_mb = \"p4ssw0rd\"").unwrap_err();
        assert!(!e.contains("p4ssw0rd"), "{e}");
        assert!(e.contains("invalid type: a string, expected"), "{e}");
    }

    #[test]
    fn unknown_keys_are_named_and_valid_manifests_parse() {
        let e = parse("descripton = \"x\"").unwrap_err();
        assert!(e.contains("descripton"), "{e}");
        let m = parse("description = \"d\"\n[config]\nurl = \"ws://x\"").unwrap();
        assert_eq!(m.description.as_deref(), Some("d"));
    }

    #[test]
    fn links_leaving_the_folder_are_refused_links_inside_are_followed() {
        let plugins = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join(".env");
        std::fs::write(&secret, "OPENAI_API_KEY=sk-secret-value\n").unwrap();
        let wasm = plugins.path().join("p.wasm");
        std::os::unix::fs::symlink(&secret, plugins.path().join("p.toml")).unwrap();
        let e = format!("{:#}", load_beside(&wasm).unwrap_err());
        assert!(
            e.contains("symbolic link that leaves the plugin folder"),
            "{e}"
        );
        assert!(!e.contains("sk-secret"), "{e}");

        std::fs::remove_file(plugins.path().join("p.toml")).unwrap();
        std::fs::write(plugins.path().join("real.toml"), "description = \"x\"").unwrap();
        std::os::unix::fs::symlink("real.toml", plugins.path().join("p.toml")).unwrap();
        assert!(load_beside(&wasm).unwrap().is_some());
    }

    #[test]
    fn a_regular_file_that_is_not_a_manifest_is_not_echoed() {
        let plugins = tempfile::tempdir().unwrap();
        std::fs::write(
            plugins.path().join("p.toml"),
            "export DATABASE_PASSWORD=hunter2-very-secret\n",
        )
        .unwrap();
        let e = format!(
            "{:#}",
            load_beside(&plugins.path().join("p.wasm")).unwrap_err()
        );
        assert!(!e.contains("hunter2"), "{e}");
        assert!(e.contains("line 1"), "{e}");
    }
}
