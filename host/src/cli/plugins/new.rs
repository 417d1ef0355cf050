//! `rkmcp plugins new KIND NAME [--lang rust|python]`: a plugin project that builds with one
//! command and passes `rkmcp plugins check`.
//!
//! The templates are compiled into the binary (`include_str!`), so an installed rkmcp needs no
//! source tree except for the Rust SDK crate. They cannot rot unnoticed: the Python guard *is*
//! the bundled `plugins/guard-python/app.py` that CI builds, and
//! `tests/integration/plugin_scaffold.rs` builds the generated projects and checks them.
use std::path::{Path, PathBuf};

use super::UsageError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Reads the model's streamed answer and finds tool calls in it.
    Detector,
    /// Turns MCP tool schemas into the prompt section (and formats results).
    Converter,
    /// Allows, denies or asks about each tool call.
    Guard,
    /// Carries MCP messages to a server over the network.
    Transport,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
}

impl Kind {
    fn world(self) -> &'static str {
        match self {
            Kind::Detector => "detector-plugin",
            Kind::Converter => "schema-converter-plugin",
            Kind::Guard => "approval-guard-plugin",
            Kind::Transport => "transport-plugin",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Kind::Detector => "tool-call detector",
            Kind::Converter => "schema converter",
            Kind::Guard => "approval guard",
            Kind::Transport => "transport",
        }
    }

    fn arg(self) -> &'static str {
        match self {
            Kind::Detector => "detector",
            Kind::Converter => "converter",
            Kind::Guard => "guard",
            Kind::Transport => "transport",
        }
    }

    /// What the manifest requests: only a transport needs anything (the server's address).
    fn requests(self) -> &'static str {
        match self {
            Kind::Transport => {
                "\n[requests]\nnetwork = [\"127.0.0.1:8765\"]\n\n[config]\naddress = \"127.0.0.1:8765\"\n"
            }
            _ => "",
        }
    }
}

const RUST_CARGO: &str = include_str!("templates/rust/Cargo.toml");
const RUST_MANIFEST: &str = include_str!("templates/rust/manifest.toml");
const RUST_README: &str = include_str!("templates/rust/README.md");
const RUST_DETECTOR: &str = include_str!("templates/rust/detector/lib.rs");
const RUST_CONVERTER: &str = include_str!("templates/rust/converter/lib.rs");
const RUST_GUARD: &str = include_str!("templates/rust/guard/lib.rs");
const RUST_TRANSPORT: &str = include_str!("templates/rust/transport/lib.rs");

const PY_BUILD: &str = include_str!("templates/python/build.sh");
const PY_README: &str = include_str!("templates/python/README.md");
// The bundled Python guard, built and tested in CI: the template is that very plugin.
const PY_GUARD: &str = include_str!("../../../../plugins/guard-python/app.py");
const PY_GUARD_MANIFEST: &str = include_str!("../../../../plugins/guard-python/guard-python.toml");

/// The WIT a non-Rust project builds against (the Rust SDK carries its own copy).
const WIT: &[(&str, &str)] = &[
    (
        "approval-guard.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.1.0/approval-guard.wit"),
    ),
    (
        "detector.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.1.0/detector.wit"),
    ),
    (
        "schema-converter.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.1.0/schema-converter.wit"),
    ),
    (
        "transport.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.1.0/transport.wit"),
    ),
    (
        "types.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.1.0/types.wit"),
    ),
    (
        "worlds.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.1.0/worlds.wit"),
    ),
];

/// The SDK crate beside the sources this rkmcp was built from.
fn default_sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("plugins")
        .join("sdk")
}

/// A plugin name becomes a file name, a crate name and a config key: keep it to what all three
/// accept.
fn check_name(name: &str) -> Result<(), UsageError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(UsageError(format!(
            "plugin name {name:?}: use lowercase letters, digits and '-', starting with a letter (e.g. my-guard)"
        )))
    }
}

/// Creates the project; returns the one command that builds it.
pub fn scaffold(
    kind: Kind,
    name: &str,
    lang: Lang,
    dir: Option<PathBuf>,
    sdk: Option<PathBuf>,
) -> anyhow::Result<(PathBuf, String)> {
    check_name(name)?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    // Never overwrite: an existing folder (even an empty one) may be someone's work.
    if dir.exists() {
        return Err(UsageError(format!(
            "{} already exists; choose another NAME or --dir (rkmcp never overwrites a folder)",
            dir.display()
        ))
        .into());
    }
    let mut files: Vec<(PathBuf, String, bool)> = Vec::new();
    let vars = |text: &str, build: &str, sdk: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{kind}}", kind.arg())
            .replace("{{kind_text}}", kind.text())
            .replace("{{world}}", kind.world())
            .replace("{{requests}}", kind.requests())
            .replace("{{build}}", build)
            .replace("{{sdk}}", sdk)
    };
    let build = match lang {
        Lang::Rust => {
            let sdk = sdk.unwrap_or_else(default_sdk);
            let sdk = std::fs::canonicalize(&sdk).map_err(|_| {
                UsageError(format!(
                    "the Rust plugin SDK is not at {}: pass --sdk PATH (the plugins/sdk folder of rkmcp's sources)",
                    sdk.display()
                ))
            })?;
            let sdk = sdk.display().to_string().replace('\\', "/");
            let crate_name = name.replace('-', "_");
            let build = format!(
                "cargo build --release --target wasm32-wasip2 && cp target/wasm32-wasip2/release/{crate_name}.wasm {name}.wasm"
            );
            let lib = match kind {
                Kind::Detector => RUST_DETECTOR,
                Kind::Converter => RUST_CONVERTER,
                Kind::Guard => RUST_GUARD,
                Kind::Transport => RUST_TRANSPORT,
            };
            files.push(("Cargo.toml".into(), vars(RUST_CARGO, &build, &sdk), false));
            files.push(("src/lib.rs".into(), lib.to_string(), false));
            files.push((
                format!("{name}.toml").into(),
                vars(RUST_MANIFEST, &build, &sdk),
                false,
            ));
            files.push(("README.md".into(), vars(RUST_README, &build, &sdk), false));
            files.push((".gitignore".into(), "/target\n*.wasm\n".into(), false));
            build
        }
        Lang::Python => {
            if kind != Kind::Guard {
                return Err(UsageError(format!(
                    "no Python template for a {} yet: Python has `guard`; use --lang rust for {}",
                    kind.text(),
                    kind.arg()
                ))
                .into());
            }
            let build = "./build.sh".to_string();
            files.push(("app.py".into(), PY_GUARD.to_string(), false));
            let manifest = PY_GUARD_MANIFEST.replace("guard-python", name);
            files.push((format!("{name}.toml").into(), manifest, false));
            files.push(("build.sh".into(), vars(PY_BUILD, &build, ""), true));
            files.push(("README.md".into(), vars(PY_README, &build, ""), false));
            files.push((".gitignore".into(), "*.wasm\n".into(), false));
            for (file, text) in WIT {
                files.push((Path::new("wit").join(file), text.to_string(), false));
            }
            build
        }
    };
    for (rel, text, executable) in files {
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| anyhow::anyhow!("cannot make {} executable: {e}", path.display()))?;
        }
    }
    Ok((dir, build))
}
