//! The tool list of the last run with the same server configuration, kept in the cache folder,
//! so `ask` can start its first round while the servers are still starting: on a warm machine
//! starting the servers and listing their tools is most of a question's wait, and the model
//! does not need the servers until it has written its call.
//!
//! Why a stale memory is harmless: the early round only stands when the servers, once up, list
//! exactly the tools it was generated with (same names, descriptions, schemas and annotations,
//! from servers naming the same versions); otherwise it is discarded and the turn starts again
//! from the live list. A wrong memory costs one round's time, never a call of a tool that is
//! not there. Nothing secret is stored: the key is a digest of the server configuration, and
//! the file holds what the servers listed.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use rkmcp_config::Config;
use rkmcp_sessions::manager::{ExposedTool, SessionManager};

/// Bumped when the file's shape changes: an older file is then ignored, not misread.
const FORMAT: u32 = 1;

/// What the servers of one configuration listed, and which versions of them did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RememberedTools {
    format: u32,
    /// Each started server's name and the version its handshake named (in config order).
    servers: Vec<(String, Option<String>)>,
    tools: Vec<ExposedTool>,
}

impl RememberedTools {
    /// The live list, when every configured server started: a list missing a server that failed
    /// would only be discarded next time.
    pub fn from_live(sessions: &SessionManager) -> Option<RememberedTools> {
        if !sessions.failures().is_empty() {
            return None;
        }
        let servers = sessions
            .sessions()
            .iter()
            .map(|s| {
                let version = s
                    .server_info()
                    .and_then(|i| i.server_info.as_ref().map(|s| s.version.clone()));
                (s.name().to_string(), version)
            })
            .collect();
        Some(RememberedTools {
            format: FORMAT,
            servers,
            tools: sessions.tools().0,
        })
    }

    /// The tools as the engine lists them.
    pub fn exposed(&self) -> Vec<ExposedTool> {
        self.tools.clone()
    }

    pub fn tool_count(&self) -> usize {
        self.tools.len()
    }

    /// Whether `live` is the same list from the same server versions, compared as the JSON the
    /// servers sent (what the prompt and the grammar were built from).
    pub fn same_as(&self, live: &RememberedTools) -> bool {
        self.servers == live.servers
            && serde_json::to_value(&self.tools).ok() == serde_json::to_value(&live.tools).ok()
    }

    /// Why `live` differs, for the transcript and `-v`.
    pub fn difference(&self, live: &RememberedTools) -> String {
        if self.servers != live.servers {
            let names = |s: &RememberedTools| {
                s.servers
                    .iter()
                    .map(|(n, v)| format!("{n} {}", v.as_deref().unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return format!(
                "the servers changed (remembered: {}; now: {})",
                names(self),
                names(live)
            );
        }
        let names = |s: &RememberedTools| s.tools.iter().map(|t| t.name.clone()).collect();
        let (before, now): (Vec<String>, Vec<String>) = (names(self), names(live));
        if before != now {
            format!(
                "the tool list changed ({} remembered, {} now)",
                before.len(),
                now.len()
            )
        } else {
            "a tool's description or schema changed".into()
        }
    }
}

/// Where the list of one server configuration is kept: `DIR/KEY.json`, the key a digest of the
/// configuration of the servers a run starts (all of them, or the one `--server` names).
#[derive(Debug, Clone)]
pub struct ToolListMemory {
    path: PathBuf,
}

impl ToolListMemory {
    /// In rkmcp's cache folder.
    pub fn for_config(config: &Config, only: Option<&str>) -> Option<ToolListMemory> {
        Self::in_dir(
            &rkmcp_llm::store::cache_dir().join("tool-lists"),
            config,
            only,
        )
    }

    pub fn in_dir(dir: &Path, config: &Config, only: Option<&str>) -> Option<ToolListMemory> {
        let servers: Vec<_> = config
            .servers
            .iter()
            .filter(|s| only.is_none_or(|o| s.name == o))
            .collect();
        if servers.is_empty() {
            return None;
        }
        let json = serde_json::to_vec(&servers).ok()?;
        let mut digest = Sha256::new();
        digest.update(env!("CARGO_PKG_VERSION").as_bytes());
        digest.update([0]);
        digest.update(&json);
        let key: String = digest.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(ToolListMemory {
            path: dir.join(format!("{key}.json")),
        })
    }

    /// The remembered list; `None` when there is none or it cannot be read (a damaged or older
    /// file only costs the early start).
    pub fn load(&self) -> Option<RememberedTools> {
        let text = std::fs::read(&self.path).ok()?;
        match serde_json::from_slice::<RememberedTools>(&text) {
            Ok(r) if r.format == FORMAT => Some(r),
            Ok(_) => None,
            Err(e) => {
                tracing::debug!("ignoring {}: {e}", self.path.display());
                None
            }
        }
    }

    /// Keeps `list` for the next run (written aside, then renamed, so a concurrent run never
    /// reads half a file). Failing to write only costs the next run its early start.
    pub fn save(&self, list: &RememberedTools) {
        let write = || -> std::io::Result<()> {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let tmp = self
                .path
                .with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(
                &tmp,
                serde_json::to_vec(list).map_err(std::io::Error::other)?,
            )?;
            std::fs::rename(&tmp, &self.path)
        };
        if let Err(e) = write() {
            tracing::debug!(
                "cannot remember the tool list in {}: {e}",
                self.path.display()
            );
        }
    }
}

/// Where a turn's tool list came from (the transcript's `tool_list`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum ToolListSource {
    /// The servers' own lists (no early start).
    #[default]
    Live,
    /// The list remembered from the last run, started before the servers were up and
    /// confirmed by them once they were.
    Remembered,
    /// The first round started from the remembered list, which the servers did not confirm:
    /// it was discarded and the turn started again from their list.
    Discarded { why: String },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: &str) -> ExposedTool {
        ExposedTool {
            name: format!("srv__{name}"),
            server: "srv".into(),
            tool: serde_json::from_value(json!({
                "name": name,
                "description": description,
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}
            }))
            .unwrap(),
        }
    }

    fn list(version: &str, tools: Vec<ExposedTool>) -> RememberedTools {
        RememberedTools {
            format: FORMAT,
            servers: vec![("srv".into(), Some(version.into()))],
            tools,
        }
    }

    #[test]
    fn the_same_list_from_the_same_versions_is_the_same_and_any_change_is_not() {
        let a = list("1.0", vec![tool("weather", "Weather in a city")]);
        assert!(a.same_as(&a.clone()));
        let other_version = list("1.1", vec![tool("weather", "Weather in a city")]);
        assert!(!a.same_as(&other_version));
        assert!(a.difference(&other_version).contains("srv 1.1"));
        let described = list("1.0", vec![tool("weather", "Weather of a city")]);
        assert!(!a.same_as(&described));
        assert!(a.difference(&described).contains("description or schema"));
        let more = list(
            "1.0",
            vec![tool("weather", "Weather in a city"), tool("time", "Time")],
        );
        assert!(!a.same_as(&more));
        assert!(a.difference(&more).contains("1 remembered, 2 now"));
    }

    fn config(toml: &str) -> Config {
        rkmcp_config::load_str(Path::new("/etc/rkmcp.toml"), toml).unwrap()
    }

    #[test]
    fn the_key_follows_the_server_configuration_and_the_selection() {
        let dir = tempfile::tempdir().unwrap();
        let one = config("[[servers]]\nname = \"a\"\ncommand = \"srv\"\n");
        let two = config(
            "[[servers]]\nname = \"a\"\ncommand = \"srv\"\n[[servers]]\nname = \"b\"\ncommand = \"other\"\n",
        );
        let args = config("[[servers]]\nname = \"a\"\ncommand = \"srv\"\nargs = [\"-v\"]\n");
        let key = |c: &Config, only: Option<&str>| {
            ToolListMemory::in_dir(dir.path(), c, only).map(|m| m.path)
        };
        assert_eq!(key(&one, None), key(&one, None));
        assert_ne!(key(&one, None), key(&two, None));
        assert_ne!(key(&one, None), key(&args, None));
        // `--server a` starts the same server as a config that has only `a`.
        assert_eq!(key(&two, Some("a")), key(&one, None));
        assert_eq!(key(&one, Some("missing")), None);
        assert_eq!(key(&config(""), None), None);
    }

    #[test]
    fn a_saved_list_loads_back_and_a_damaged_or_older_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let c = config("[[servers]]\nname = \"srv\"\ncommand = \"srv\"\n");
        let memory = ToolListMemory::in_dir(dir.path(), &c, None).unwrap();
        assert!(memory.load().is_none());
        let a = list("1.0", vec![tool("weather", "Weather in a city")]);
        memory.save(&a);
        let back = memory.load().expect("saved");
        assert!(back.same_as(&a));
        assert_eq!(back.exposed()[0].name, "srv__weather");
        std::fs::write(&memory.path, b"{\"format\": 1, \"servers\": [").unwrap();
        assert!(memory.load().is_none());
        let mut old = serde_json::to_value(&a).unwrap();
        old["format"] = json!(0);
        std::fs::write(&memory.path, old.to_string()).unwrap();
        assert!(memory.load().is_none());
    }
}
