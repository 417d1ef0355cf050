//! The tool names a model sees: filtered by each server's allow/deny globs, namespaced by its
//! prefix, made safe for model APIs, and de-duplicated deterministically.
//!
//! Model APIs and chat templates commonly accept `^[A-Za-z0-9_-]{1,64}$`, so other characters
//! become `_` and long names are shortened with a hash suffix. When two tools still end up with the
//! same name, the server listed first in the config keeps it and the other gets `_2`, `_3`, …;
//! every such rename is reported.
use std::collections::{BTreeMap, HashSet};

use globset::{Glob, GlobSet, GlobSetBuilder};

pub const MAX_TOOL_NAME: usize = 64;

/// Allow/deny filtering of a server's tools by their original names.
#[derive(Debug, Clone)]
pub struct ToolFilter {
    allow: Option<GlobSet>,
    deny: GlobSet,
}

impl ToolFilter {
    pub fn new(allow: &[String], deny: &[String]) -> Result<ToolFilter, globset::Error> {
        let build = |patterns: &[String]| -> Result<GlobSet, globset::Error> {
            let mut b = GlobSetBuilder::new();
            for p in patterns {
                b.add(Glob::new(p)?);
            }
            b.build()
        };
        Ok(ToolFilter {
            allow: if allow.is_empty() {
                None
            } else {
                Some(build(allow)?)
            },
            deny: build(deny)?,
        })
    }

    /// Deny wins over allow; an empty allow list allows everything.
    pub fn permits(&self, tool: &str) -> bool {
        !self.deny.is_match(tool) && self.allow.as_ref().is_none_or(|a| a.is_match(tool))
    }
}

/// One server's tools, in the order the server listed them.
pub struct ServerTools<'a> {
    pub server: &'a str,
    pub prefix: &'a str,
    pub tools: Vec<&'a str>,
}

/// A tool as exposed to the model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExposedName {
    pub exposed: String,
    pub server: String,
    pub tool: String,
}

/// A name that had to change because it was already taken.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Collision {
    pub wanted: String,
    pub given: String,
    pub server: String,
    pub tool: String,
    /// The server whose tool kept `wanted`.
    pub kept_by: String,
}

impl std::fmt::Display for Collision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tool `{}` of server `{}` would be `{}`, already used by server `{}`; it is exposed as `{}` (set a `prefix` on one of them to choose names yourself)",
            self.tool, self.server, self.wanted, self.kept_by, self.given
        )
    }
}

/// Names every tool. Input order (config order of servers, server order of tools) decides who
/// keeps a contested name, so the result is the same on every run.
pub fn assign(servers: &[ServerTools<'_>]) -> (Vec<ExposedName>, Vec<Collision>) {
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    let mut names = Vec::new();
    let mut collisions = Vec::new();
    // Names wanted directly are reserved first, so a `_2` suffix never steals another tool's
    // unsuffixed name.
    let wanted: Vec<(usize, usize, String)> = servers
        .iter()
        .enumerate()
        .flat_map(|(si, s)| {
            s.tools
                .iter()
                .enumerate()
                .map(move |(ti, t)| (si, ti, sanitize(&format!("{}{}", s.prefix, t))))
        })
        .collect();
    let all_wanted: HashSet<&str> = wanted.iter().map(|(_, _, w)| w.as_str()).collect();
    for (si, ti, want) in &wanted {
        let server = servers[*si].server;
        let tool = servers[*si].tools[*ti];
        let given = if let Some(owner) = taken.get(want) {
            let mut n = 2;
            let given = loop {
                let candidate = with_suffix(want, n);
                if !taken.contains_key(&candidate) && !all_wanted.contains(candidate.as_str()) {
                    break candidate;
                }
                n += 1;
            };
            collisions.push(Collision {
                wanted: want.clone(),
                given: given.clone(),
                server: server.to_string(),
                tool: tool.to_string(),
                kept_by: owner.clone(),
            });
            given
        } else {
            want.clone()
        };
        taken.insert(given.clone(), server.to_string());
        names.push(ExposedName {
            exposed: given,
            server: server.to_string(),
            tool: tool.to_string(),
        });
    }
    (names, collisions)
}

/// Makes a name acceptable to model APIs: `[A-Za-z0-9_-]`, at most 64 characters.
pub fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = if clean.is_empty() {
        "_".to_string()
    } else {
        clean
    };
    if clean.len() <= MAX_TOOL_NAME {
        clean
    } else {
        // Keep it unique: a hash of the full name replaces the tail.
        let hash = fnv1a(name.as_bytes());
        format!("{}_{hash:08x}", &clean[..MAX_TOOL_NAME - 9])
    }
}

fn with_suffix(name: &str, n: usize) -> String {
    let suffix = format!("_{n}");
    if name.len() + suffix.len() <= MAX_TOOL_NAME {
        format!("{name}{suffix}")
    } else {
        format!("{}{suffix}", &name[..MAX_TOOL_NAME - suffix.len()])
    }
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x01000193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_keeps_distinct_names() {
        let (names, collisions) = assign(&[
            ServerTools {
                server: "a",
                prefix: "a__",
                tools: vec!["echo", "add"],
            },
            ServerTools {
                server: "b",
                prefix: "b__",
                tools: vec!["echo"],
            },
        ]);
        let exposed: Vec<_> = names.iter().map(|n| n.exposed.as_str()).collect();
        assert_eq!(exposed, ["a__echo", "a__add", "b__echo"]);
        assert!(collisions.is_empty());
    }

    #[test]
    fn collisions_resolve_by_config_order_and_are_reported() {
        let servers = [
            ServerTools {
                server: "first",
                prefix: "",
                tools: vec!["echo", "echo_2"],
            },
            ServerTools {
                server: "second",
                prefix: "",
                tools: vec!["echo"],
            },
        ];
        let (names, collisions) = assign(&servers);
        assert_eq!(names[0].exposed, "echo");
        assert_eq!(names[0].server, "first");
        // `echo_2` is a real tool name of `first`, so the renamed duplicate skips it.
        assert_eq!(names[1].exposed, "echo_2");
        assert_eq!(names[2].exposed, "echo_3");
        assert_eq!(collisions.len(), 1);
        assert_eq!(collisions[0].kept_by, "first");
        assert_eq!(collisions[0].server, "second");
        assert!(collisions[0].to_string().contains("exposed as `echo_3`"));
        // Same input, same answer.
        assert_eq!(assign(&servers).0, names);
    }

    #[test]
    fn sanitizes_and_bounds_length() {
        assert_eq!(sanitize("fs.read file"), "fs_read_file");
        let long = "x".repeat(100);
        let a = sanitize(&long);
        assert_eq!(a.len(), MAX_TOOL_NAME);
        assert_ne!(a, sanitize(&format!("{long}y")));
    }

    #[test]
    fn filter_deny_wins() {
        let f = ToolFilter::new(&["get_*".into(), "echo".into()], &["get_env".into()]).unwrap();
        assert!(f.permits("get_sum"));
        assert!(f.permits("echo"));
        assert!(!f.permits("get_env"));
        assert!(!f.permits("write_file"));
        let all = ToolFilter::new(&[], &[]).unwrap();
        assert!(all.permits("anything"));
    }
}
