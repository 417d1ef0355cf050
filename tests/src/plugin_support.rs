//! Helpers for the plugin tests: find the components built by `scripts/build-plugins`,
//! lay out a plugin folder and write a `[plugins]` config for it.

use std::path::{Path, PathBuf};

use rkmcp_plugin_host::{PluginHost, PluginsConfig};

/// Folders where `scripts/build-plugins` may have put `NAME.wasm`: `$CARGO_TARGET_DIR/plugins`,
/// the target dir this test binary lives in, and `target/plugins` of the repository.
pub fn plugin_build_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        dirs.push(PathBuf::from(t).join("plugins"));
    }
    // target/release/deps/plugin_x-HASH -> target
    if let Ok(exe) = std::env::current_exe()
        && let Some(target) = exe.parent().and_then(Path::parent).and_then(Path::parent)
    {
        dirs.push(target.join("plugins"));
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/plugins"));
    dirs
}

/// Path of a built test component, e.g. `built("testplug-hostile")`.
pub fn built(name: &str) -> PathBuf {
    let dirs = plugin_build_dirs();
    dirs.iter()
        .map(|d| d.join(format!("{name}.wasm")))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name}.wasm not found in {dirs:?}; build the test plugins first with scripts/build-plugins"
            )
        })
}

/// A compile cache shared by the tests of one target dir, so each component compiles once.
pub fn shared_cache() -> PathBuf {
    plugin_build_dirs()[0].with_file_name("plugin-test-cache")
}

pub struct Fixture {
    pub plugins: tempfile::TempDir,
    pub data: tempfile::TempDir,
}

impl Fixture {
    /// A plugin folder holding the given built components under plugin names:
    /// `&[("testplug-hostile", "hostile")]`.
    pub fn new(components: &[(&str, &str)]) -> Fixture {
        let plugins = tempfile::tempdir().expect("temp dir");
        for (built_name, as_name) in components {
            std::fs::copy(
                built(built_name),
                plugins.path().join(format!("{as_name}.wasm")),
            )
            .expect("copy component");
        }
        Fixture {
            plugins,
            data: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// Parses a `[plugins]` table: the folder and cache settings plus `extra` TOML (grants).
    pub fn config(&self, extra: &str) -> PluginsConfig {
        self.config_with_cache(&shared_cache(), extra)
    }

    pub fn config_with_cache(&self, cache: &Path, extra: &str) -> PluginsConfig {
        // The healthy detector gets a deadline that a loaded 2-core CI machine cannot miss:
        // the tests about deadlines use the hostile plugin.
        let text = format!(
            "dirs = [{:?}]\ndefault_dir = false\ncache_dir = {:?}\n{extra}\n[grants.healthy]\ncall_timeout_ms = 5000\n",
            self.plugins.path(),
            cache
        );
        toml::from_str(&text).unwrap_or_else(|e| panic!("bad test config:\n{text}\n{e}"))
    }

    pub fn host(&self, extra: &str) -> PluginHost {
        PluginHost::new(self.config(extra)).expect("plugin host")
    }

    /// A chat over the fixture MCP server `server_exe` (as `fx`, its `echo` tool only) whose
    /// plugins come from this fixture's folder, with `[plugins]` grants `grants_toml` and
    /// `[chat]` settings `chat_toml`; the guards, detector and converter those settings name
    /// are attached, and every call is approved.
    pub async fn chat(
        &self,
        server_exe: &str,
        grants_toml: &str,
        chat_toml: &str,
        backend: rkmcp_llm::SharedBackend,
    ) -> rkmcp::chat::ChatEngine {
        use crate::{load_config, stdio_entry, toml_str};
        let toml = format!(
            "{}\n[plugins]\ndirs = [{}]\ndefault_dir = false\ncache_dir = {}\n{grants_toml}\n\n[chat]\n{chat_toml}\n",
            stdio_entry("fx", server_exe, &[], "allow = [\"echo\"]"),
            toml_str(&self.plugins.path().display().to_string()),
            toml_str(&shared_cache().display().to_string()),
        );
        let config = load_config(self.data.path(), &toml);
        let settings: rkmcp::chat::ChatSettings = config.section("chat").expect("[chat]");
        let loaded = rkmcp::chat::start::load_plugins(&config, &settings).expect("plugins load");
        let sessions = rkmcp::mcp::SessionManager::start(&config, None).await;
        assert!(sessions.failures().is_empty(), "{:?}", sessions.failures());
        let approver =
            rkmcp::chat::approval::Approver::new(&settings.approval, loaded.guards, None, true)
                .expect("approver");
        let mut engine = rkmcp::chat::ChatEngine::new(
            backend,
            std::sync::Arc::new(sessions),
            settings,
            approver,
        );
        if let Some(d) = loaded.detector {
            engine = engine.with_detector_plugin(d);
        }
        if let Some(c) = loaded.converter {
            engine = engine.with_converter_plugin(c);
        }
        engine
    }
}

/// A newline-delimited JSON-RPC echo server on a real socket, the peer of a transport plugin: it
/// answers each request with `{"echo": params}` until the connection closes.
pub fn echo_server() -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    let handle = std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let Ok(mut out) = stream.try_clone() else {
            return;
        };
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            let v: serde_json::Value =
                serde_json::from_str(&line).expect("the transport sent JSON");
            let reply = serde_json::json!({"jsonrpc": "2.0", "id": v["id"], "result": {"echo": v["params"]}});
            if writeln!(out, "{reply}").is_err() {
                break;
            }
        }
    });
    (port, handle)
}
