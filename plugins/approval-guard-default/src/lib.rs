//! The default approval guard.
//!
//! 1. A tool whose name suggests writing (`write_file`, `createDirectory`, `move`, …) and whose
//!    arguments hold a path (`path`, `paths`, `destination`, …) is denied unless every such path is
//!    absolute and inside one of the roots in the plugin config `allowed_roots` (a TOML array of
//!    absolute paths, or one path). No roots configured = no such writes.
//! 2. A tool annotated read-only is allowed.
//! 3. A tool annotated non-destructive is allowed.
//! 4. Anything else is asked about: MCP says an unannotated tool may be destructive. The host
//!    turns the question into a deny when nobody is at the terminal.

use std::path::{Component, Path, PathBuf};

use rkmcp_plugin_sdk::{ApprovalGuard, Decision, LogLevel, ProposedCall};
use serde_json::Value;

/// Words in a tool name that mean it changes files.
const WRITE_WORDS: &[&str] = &[
    "write",
    "create",
    "edit",
    "update",
    "delete",
    "remove",
    "rm",
    "move",
    "mv",
    "rename",
    "copy",
    "cp",
    "save",
    "append",
    "put",
    "upload",
    "mkdir",
    "touch",
    "patch",
    "overwrite",
    "replace",
    "insert",
    "truncate",
    "chmod",
    "unlink",
    "rmdir",
];

/// Argument keys that name a file the call acts on.
const PATH_KEYS: &[&str] = &[
    "path",
    "paths",
    "file",
    "file_path",
    "filepath",
    "filename",
    "destination",
    "dest",
    "target",
    "source",
];

struct DefaultGuard {
    /// The parsed `allowed_roots`, or why there are none (every write is then denied with that
    /// message, so a typo in the config is visible rather than silently permissive).
    roots: Result<Vec<PathBuf>, NoRoots>,
}

/// Why the guard has no roots to allow writes in.
#[derive(Debug, PartialEq)]
enum NoRoots {
    /// None configured: absent, empty, or `[]` (the manifest's own default). The normal
    /// configuration, which denies file writes; not worth a warning on every run.
    Unset,
    /// A value that does not parse: a fault in the user's config, reported.
    Malformed(String),
}

impl std::fmt::Display for NoRoots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoRoots::Unset => f.write_str(
                "file writes are denied: this guard's config has no `allowed_roots` \
                 (set [plugins.grants.approval-guard-default.config] allowed_roots = [\"/some/dir\"])",
            ),
            NoRoots::Malformed(why) => f.write_str(why),
        }
    }
}

impl ApprovalGuard for DefaultGuard {
    fn new() -> Self {
        let configured = rkmcp_plugin_sdk::config_get("allowed_roots");
        let roots = parse_roots(configured.as_deref());
        if let Err(e) = &roots {
            let level = match e {
                NoRoots::Unset => LogLevel::Debug,
                NoRoots::Malformed(_) => LogLevel::Warn,
            };
            rkmcp_plugin_sdk::log(level, &e.to_string());
        }
        DefaultGuard { roots }
    }

    fn review(&mut self, call: ProposedCall) -> Decision {
        if name_suggests_writing(&call.tool) {
            let arguments: Value = match serde_json::from_str(&call.arguments_json) {
                Ok(v) => v,
                Err(e) => {
                    return Decision::Deny(format!(
                        "the arguments of `{}` are not valid JSON: {e}",
                        call.tool
                    ));
                }
            };
            let paths = paths_in(&arguments);
            if !paths.is_empty() {
                let roots = match &self.roots {
                    Ok(r) => r,
                    Err(e) => return Decision::Deny(e.to_string()),
                };
                for p in paths {
                    if let Err(why) = check_inside(p, roots) {
                        return Decision::Deny(format!(
                            "`{}` on server `{}` would write {why}",
                            call.tool, call.server
                        ));
                    }
                }
            }
        }
        let a = &call.annotations;
        if a.read_only == Some(true) {
            return Decision::Allow;
        }
        if a.destructive == Some(false) {
            return Decision::Allow;
        }
        let why = if a.destructive == Some(true) {
            "is marked destructive"
        } else {
            "may change things (no annotations say otherwise)"
        };
        Decision::Ask(format!(
            "Run `{}` on server `{}`? It {why}. Arguments: {}",
            call.tool, call.server, call.arguments_json
        ))
    }
}

/// `allowed_roots`: a TOML array of strings (`["/srv/data", "/tmp/out"]`), or a single path.
fn parse_roots(value: Option<&str>) -> Result<Vec<PathBuf>, NoRoots> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Err(NoRoots::Unset);
    };
    let list: Vec<String> = if value.starts_with('[') {
        let table: toml::Table = toml::from_str(&format!("v = {value}")).map_err(|e| {
            NoRoots::Malformed(format!(
                "config `allowed_roots` is not a TOML array of strings: {e}"
            ))
        })?;
        match table.get("v") {
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str().map(str::to_string).ok_or_else(|| {
                        NoRoots::Malformed(format!("config `allowed_roots`: `{i}` is not a string"))
                    })
                })
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(NoRoots::Malformed(
                    "config `allowed_roots` is not a TOML array of strings".to_string(),
                ));
            }
        }
    } else {
        vec![value.to_string()]
    };
    if list.is_empty() {
        return Err(NoRoots::Unset);
    }
    list.iter()
        .map(|r| {
            let p = Path::new(r);
            if !p.is_absolute() {
                return Err(NoRoots::Malformed(format!(
                    "config `allowed_roots`: `{r}` is not an absolute path"
                )));
            }
            Ok(normalize(p))
        })
        .collect()
}

/// Splits `write_file`, `createDirectory`, `fs.move-item` into lower-case words.
fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
        cur.extend(ch.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

fn name_suggests_writing(name: &str) -> bool {
    name_words(name)
        .iter()
        .any(|w| WRITE_WORDS.contains(&w.as_str()))
}

/// String values under the path-like keys at the top level of the arguments (arrays of
/// strings count too, as in `paths`).
fn paths_in(arguments: &Value) -> Vec<&str> {
    let Some(obj) = arguments.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in obj {
        if !PATH_KEYS.contains(&k.to_ascii_lowercase().as_str()) {
            continue;
        }
        match v {
            Value::String(s) => out.push(s.as_str()),
            Value::Array(items) => out.extend(items.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    out
}

/// Lexical normalisation: `.` dropped, `..` pops (never above the root). The guard cannot see
/// the server's file system, so symlinks are the server's (and the user's roots') business.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn check_inside(path: &str, roots: &[PathBuf]) -> Result<(), String> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(format!(
            "to the relative path `{path}`; only absolute paths inside the allowed roots are allowed"
        ));
    }
    let p = normalize(p);
    if roots.iter().any(|r| p.starts_with(r)) {
        return Ok(());
    }
    let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    Err(format!(
        "`{}` outside the allowed roots ({})",
        p.display(),
        roots.join(", ")
    ))
}

rkmcp_plugin_sdk::export_approval_guard!(DefaultGuard);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_tool_names_into_words() {
        assert_eq!(name_words("write_file"), ["write", "file"]);
        assert_eq!(name_words("createDirectory"), ["create", "directory"]);
        assert_eq!(name_words("fs.move-item"), ["fs", "move", "item"]);
        assert!(name_suggests_writing("edit_file"));
        assert!(!name_suggests_writing("read_text_file"));
        assert!(!name_suggests_writing("list_directory"));
        // Whole words only: "update" is a write word, "updates" in a reader's name is not.
        assert!(!name_suggests_writing("get_updates"));
    }

    #[test]
    fn parses_roots_and_refuses_bad_ones() {
        assert_eq!(
            parse_roots(Some(r#"["/a", '/b/../c']"#)),
            Ok(vec![PathBuf::from("/a"), PathBuf::from("/c")])
        );
        assert_eq!(
            parse_roots(Some("/srv/x")),
            Ok(vec![PathBuf::from("/srv/x")])
        );
        // Absent, empty and `[]` (the manifest's default) are the normal configuration, not a
        // fault: no writes, and no warning on every run.
        assert_eq!(parse_roots(None), Err(NoRoots::Unset));
        assert_eq!(parse_roots(Some(" ")), Err(NoRoots::Unset));
        assert_eq!(parse_roots(Some("[]")), Err(NoRoots::Unset));
        assert!(NoRoots::Unset.to_string().contains("allowed_roots"));
        assert!(
            parse_roots(Some("[1]"))
                .unwrap_err()
                .to_string()
                .contains("not a string")
        );
        assert!(
            parse_roots(Some("rel/dir"))
                .unwrap_err()
                .to_string()
                .contains("not an absolute path")
        );
    }

    #[test]
    fn inside_means_under_a_root_after_normalising() {
        let roots = [PathBuf::from("/srv/data")];
        assert!(check_inside("/srv/data/a.txt", &roots).is_ok());
        assert!(check_inside("/srv/data", &roots).is_ok());
        assert!(check_inside("/srv/database/a", &roots).is_err());
        assert!(check_inside("/srv/data/../etc/passwd", &roots).is_err());
        assert!(
            check_inside("a.txt", &roots)
                .unwrap_err()
                .contains("relative")
        );
    }
}
