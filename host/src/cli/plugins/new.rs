//! `rkmcp plugins new KIND NAME [--lang rust|python|js]`: a plugin project that builds with one
//! command and passes `rkmcp plugins check`.
//!
//! The templates are compiled into the binary (`include_str!`), so an installed rkmcp needs no
//! source tree except for the Rust SDK crate. They cannot rot unnoticed: the Python guard *is*
//! the bundled `plugins/guard-python/app.py` that CI builds (the JavaScript guard likewise
//! `plugins/guard-js/app.js`, see `js.rs`), and `tests/integration/plugin_scaffold.rs` (JavaScript:
//! `plugin_scaffold_js.rs`) builds the generated projects and checks them.
use std::path::{Path, PathBuf};

use rkmcp_plugin_host::SUPPORTED_VERSIONS;

use super::UsageError;

mod js;

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
    /// JavaScript (componentize-js): detector, converter, guard.
    Js,
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

    /// What the generic manifest requests: only a transport needs anything (the server's address).
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
// The bundled Python guard and transport, built and tested in CI: the templates are those very
// plugins (their bundled name is replaced by the new one).
const PY_GUARD: &str = include_str!("../../../../plugins/guard-python/app.py");
const PY_GUARD_MANIFEST: &str = include_str!("../../../../plugins/guard-python/guard-python.toml");
const PY_TRANSPORT: &str = include_str!("../../../../plugins/transport-tcp-python/app.py");
const PY_TRANSPORT_MODULE: &str =
    include_str!("../../../../plugins/transport-tcp-python/transport.py");
const PY_TRANSPORT_MANIFEST: &str =
    include_str!("../../../../plugins/transport-tcp-python/transport-tcp-python.toml");
const PY_DETECTOR: &str = include_str!("templates/python/detector/app.py");
const PY_DETECTOR_MODULE: &str = include_str!("templates/python/detector/detector.py");
const PY_CONVERTER: &str = include_str!("templates/python/converter/app.py");

/// A Python project's sources: `app.py`, the bundled plugin's name (replaced by the new one), its
/// manifest (`None`: the generic one) and the module componentize-py takes an exported resource
/// from (named after the resource's interface).
struct PySources {
    app: &'static str,
    bundled: Option<&'static str>,
    manifest: Option<&'static str>,
    module: Option<(&'static str, &'static str)>,
}

fn python_sources(kind: Kind) -> PySources {
    match kind {
        Kind::Detector => PySources {
            app: PY_DETECTOR,
            bundled: None,
            manifest: None,
            module: Some(("detector.py", PY_DETECTOR_MODULE)),
        },
        Kind::Converter => PySources {
            app: PY_CONVERTER,
            bundled: None,
            manifest: None,
            module: None,
        },
        Kind::Guard => PySources {
            app: PY_GUARD,
            bundled: Some("guard-python"),
            manifest: Some(PY_GUARD_MANIFEST),
            module: None,
        },
        Kind::Transport => PySources {
            app: PY_TRANSPORT,
            bundled: Some("transport-tcp-python"),
            manifest: Some(PY_TRANSPORT_MANIFEST),
            module: Some(("transport.py", PY_TRANSPORT_MODULE)),
        },
    }
}

/// The WIT a non-Rust project builds against (the Rust SDK reads the same folder). It must be the
/// newest contract the host loads: a unit test below compares it with [`SUPPORTED_VERSIONS`].
const WIT: &[(&str, &str)] = &[
    (
        "approval-guard.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.2.0/approval-guard.wit"),
    ),
    (
        "detector.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.2.0/detector.wit"),
    ),
    (
        "schema-converter.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.2.0/schema-converter.wit"),
    ),
    (
        "transport.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.2.0/transport.wit"),
    ),
    (
        "types.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.2.0/types.wit"),
    ),
    (
        "worlds.wit",
        include_str!("../../../../wit/rkmcp-plugin@0.2.0/worlds.wit"),
    ),
];

/// The SDK crate beside the sources this rkmcp was built from.
fn default_sdk() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("plugins")
        .join("sdk")
}

/// The SDK folder, checked: a wrong `--sdk` should fail here, naming the folder, and not later
/// inside cargo with a message about a missing package.
fn find_sdk(sdk: Option<PathBuf>) -> Result<PathBuf, UsageError> {
    let given = sdk.is_some();
    let sdk = sdk.unwrap_or_else(default_sdk);
    let hint = if given {
        "pass the plugins/sdk folder of rkmcp's sources"
    } else {
        "this rkmcp was not run from its source tree; pass --sdk PATH (the plugins/sdk folder of rkmcp's sources)"
    };
    let real = std::fs::canonicalize(&sdk).map_err(|e| {
        UsageError(format!(
            "the Rust plugin SDK is not at {}: {e}; {hint}",
            sdk.display()
        ))
    })?;
    let manifest = real.join("Cargo.toml");
    match std::fs::read_to_string(&manifest) {
        Ok(text) if text.contains("name = \"rkmcp-plugin-sdk\"") => Ok(real),
        Ok(_) => Err(UsageError(format!(
            "{} is not the rkmcp plugin SDK (its package is not rkmcp-plugin-sdk); {hint}",
            manifest.display()
        ))),
        Err(e) => Err(UsageError(format!(
            "the Rust plugin SDK is not at {}: cannot read {}: {e}; {hint}",
            sdk.display(),
            manifest.display()
        ))),
    }
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

/// What `scaffold` made.
pub struct Project {
    pub dir: PathBuf,
    /// The one command (run in `dir`) that builds `NAME.wasm`.
    pub build: String,
    /// What must be installed for `build` to work.
    pub needs: &'static str,
}

/// A file of the new project.
struct File {
    rel: PathBuf,
    text: String,
    executable: bool,
}

fn file(rel: impl Into<PathBuf>, text: impl Into<String>) -> File {
    File {
        rel: rel.into(),
        text: text.into(),
        executable: false,
    }
}

/// Creates the project; returns the one command that builds it.
pub fn scaffold(
    kind: Kind,
    name: &str,
    lang: Lang,
    dir: Option<PathBuf>,
    sdk: Option<PathBuf>,
) -> anyhow::Result<Project> {
    check_name(name)?;
    let dir = dir.unwrap_or_else(|| PathBuf::from(name));
    let contract = SUPPORTED_VERSIONS[0];
    let vars = |text: &str, build: &str, sdk: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{kind}}", kind.arg())
            .replace("{{kind_text}}", kind.text())
            .replace("{{world}}", kind.world())
            .replace("{{contract}}", contract)
            .replace("{{requests}}", kind.requests())
            .replace("{{build}}", build)
            .replace("{{sdk}}", sdk)
    };
    let mut files: Vec<File> = Vec::new();
    let (build, needs) = match lang {
        Lang::Rust => {
            let sdk = find_sdk(sdk)?;
            let crate_name = name.replace('-', "_");
            // `${CARGO_TARGET_DIR:-target}`: users (and CI) who set a shared target dir still
            // get the component copied from where cargo really put it.
            let build = format!(
                "cargo build --release --target wasm32-wasip2 && cp \"${{CARGO_TARGET_DIR:-target}}/wasm32-wasip2/release/{crate_name}.wasm\" {name}.wasm"
            );
            let sdk_text = sdk.display().to_string();
            let lib = match kind {
                Kind::Detector => RUST_DETECTOR,
                Kind::Converter => RUST_CONVERTER,
                Kind::Guard => RUST_GUARD,
                Kind::Transport => RUST_TRANSPORT,
            };
            files.push(file("Cargo.toml", vars(RUST_CARGO, &build, &sdk_text)));
            files.push(file("src/lib.rs", lib));
            files.push(file(
                format!("{name}.toml"),
                vars(RUST_MANIFEST, &build, &sdk_text),
            ));
            files.push(file("README.md", vars(RUST_README, &build, &sdk_text)));
            files.push(file(".gitignore", "/target\n*.wasm\n"));
            // The versions rkmcp's own plugins are built and tested with (wit-bindgen above
            // all, whose generated code must match the SDK's): cargo drops what the project
            // does not use on its first build. Without it the build would resolve the newest
            // versions, which may not be those the SDK was tested with.
            if let Some(lock) = sdk
                .parent()
                .and_then(Path::parent)
                .map(|root| root.join("Cargo.lock"))
                .and_then(|p| std::fs::read_to_string(p).ok())
            {
                files.push(file("Cargo.lock", lock));
            }
            (
                build,
                "the wasm32-wasip2 Rust target (rustup target add wasm32-wasip2)",
            )
        }
        Lang::Python => {
            let build = "./build.sh".to_string();
            let src = python_sources(kind);
            // A bundled plugin's name appears in its docstring and config examples.
            let renamed = |text: &str| match src.bundled {
                Some(bundled) => text.replace(bundled, name),
                None => text.to_string(),
            };
            files.push(file("app.py", renamed(src.app)));
            if let Some((module, text)) = src.module {
                files.push(file(module, text));
            }
            let manifest = match src.manifest {
                Some(m) => renamed(m),
                None => vars(RUST_MANIFEST, &build, ""),
            };
            files.push(file(format!("{name}.toml"), manifest));
            files.push(File {
                rel: "build.sh".into(),
                text: vars(PY_BUILD, &build, ""),
                executable: true,
            });
            files.push(file("README.md", vars(PY_README, &build, "")));
            files.push(file(".gitignore", "*.wasm\n"));
            for (wit, text) in WIT {
                files.push(file(Path::new("wit").join(wit), *text));
            }
            (
                build,
                "componentize-py 0.25.1 (pip install componentize-py==0.25.1), on PATH or in COMPONENTIZE_PY",
            )
        }
        Lang::Js => {
            let build = "./build.sh".to_string();
            files.extend(js::files(kind, name, &|text: &str| vars(text, &build, ""))?);
            (build, js::NEEDS)
        }
    };
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
    }
    // `create_dir` (not `exists` then create): it fails if the folder is there, even when it
    // appeared a moment ago. An existing folder, even an empty one, may be someone's work.
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(UsageError(format!(
                "{} already exists; choose another NAME or --dir (rkmcp never overwrites a folder)",
                dir.display()
            ))
            .into());
        }
        Err(e) => return Err(anyhow::anyhow!("cannot create {}: {e}", dir.display())),
    }
    if let Err(e) = write_files(&dir, &files) {
        // The folder is ours (created just above): leave no half project behind.
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    Ok(Project { dir, build, needs })
}

fn write_files(dir: &Path, files: &[File]) -> anyhow::Result<()> {
    for f in files {
        let path = dir.join(&f.rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, &f.text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        if f.executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| anyhow::anyhow!("cannot make {} executable: {e}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new contract version must reach the Python template too (the Rust one follows the
    /// SDK): this fails until the `include_str!` paths above name the newest folder.
    #[test]
    fn python_template_wit_is_the_newest_contract() {
        let package = format!("package rkmcp:plugin@{};", SUPPORTED_VERSIONS[0]);
        for (file, text) in WIT {
            assert!(
                text.lines().any(|l| l.trim() == package),
                "{file} of the Python template is not {package}"
            );
        }
    }

    #[test]
    fn names_are_file_crate_and_key_safe() {
        for good in ["a", "my-guard", "x2"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "My", "a_b", "2x", "-a", "a.b", "a/b", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn never_writes_into_an_existing_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("g");
        std::fs::create_dir(&dir).unwrap();
        let err = scaffold(Kind::Guard, "g", Lang::Python, Some(dir.clone()), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    }
}
