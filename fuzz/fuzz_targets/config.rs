//! Config parsing: any text as rkmcp's config file (TOML and the JSON `mcpServers` forms), the
//! `[plugins]` table and a plugin manifest. Errors are fine; panics are not, and neither is an
//! error message that quotes a manifest's text (finding 6 of issue 17).
//!
//! The parsers are the shipped source files, compiled in with `#[path]` (see Cargo.toml for
//! why); `ConfigError` and the contract version are the only stand-ins.
#![no_main]
#![allow(dead_code)]
use libfuzzer_sys::fuzz_target;

/// The config crate's parsing modules (see `host_config/mod.rs`).
mod host_config;

// The plugin host's `[plugins]` config and manifest modules, at the crate paths they use.
mod wit {
    pub const SUPPORTED_VERSIONS: &[&str] = &["0.2.0", "0.1.0"];
}
#[path = "../../host/crates/plugin-host/src/config.rs"]
mod config;
#[path = "../../host/crates/plugin-host/src/kind.rs"]
mod kind;
#[path = "../../host/crates/plugin-host/src/manifest.rs"]
mod manifest;
#[path = "../../host/crates/plugin-host/src/trust.rs"]
mod trust;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for (name, format) in [
        ("rkmcp.toml", host_config::file::Format::Toml),
        ("mcp.json", host_config::file::Format::Json),
    ] {
        let _ = host_config::file::parse(std::path::Path::new(name), text, format);
    }
    let _ = toml::from_str::<config::PluginsConfig>(text);
    if let Err(e) = manifest::parse(text) {
        // The error may name keys, never quote a value: no line of the text appears in it
        // unless that line is short enough to be a key name or parser word, or the parser
        // writes that line itself (a text may contain an error message: fuzzing found
        // `line 1, column 1: invalid key-value pair, expected key` as a line of the input). A
        // line is quoted when the error loses it once the line is replaced in the text.
        for line in text.lines().map(str::trim).filter(|l| l.len() > 40) {
            if !e.contains(line) {
                continue;
            }
            let without = text.replace(line, &"x".repeat(line.len()));
            let again = manifest::parse(&without).err().unwrap_or_default();
            assert!(again.contains(line), "manifest error quotes the text: {e}");
        }
    }
});
