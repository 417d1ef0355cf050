//! `plugins new KIND NAME --lang js`: a JavaScript project built with componentize-js.
//!
//! The guard template *is* the bundled `plugins/guard-js/app.js` that CI builds and tests; the
//! detector and converter do what the Rust templates of the same kind do (CALL lines), which
//! `tests/integration/plugin_scaffold_js.rs` checks through the host.
use std::path::Path;

use super::{File, Kind, RUST_MANIFEST, UsageError, WIT, file};

const BUILD: &str = include_str!("../templates/js/build.sh");
const README: &str = include_str!("../templates/js/README.md");
const DETECTOR: &str = include_str!("../templates/js/detector/app.js");
const CONVERTER: &str = include_str!("../templates/js/converter/app.js");
// The bundled JavaScript guard, built and tested in CI: the template is that very plugin.
const GUARD: &str = include_str!("../../../../../plugins/guard-js/app.js");
const GUARD_MANIFEST: &str = include_str!("../../../../../plugins/guard-js/guard-js.toml");

/// The pinned componentize-js (scripts/setup.d/js-plugins/package.json) the templates are tested with.
pub const NEEDS: &str = "Node >= 20.19 and componentize-js 0.23.0 (npm install @bytecodealliance/componentize-js@0.23.0 in the project), or COMPONENTIZE_JS naming one";

/// The name of the object `app.js` exports for the kind's interface (camelCase, as
/// componentize-js expects).
fn export_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Detector => "detector",
        Kind::Converter => "schemaConverter",
        Kind::Guard => "approvalGuard",
        Kind::Transport => "transport",
    }
}

/// The project's files; `vars` fills the shared placeholders ({{name}}, {{world}}, {{build}}, …).
/// A transport is refused (before anything is written): it needs sockets, and the JavaScript
/// engine componentize-js embeds has no socket (or file) API.
pub fn files(
    kind: Kind,
    name: &str,
    vars: &dyn Fn(&str) -> String,
) -> Result<Vec<File>, UsageError> {
    let fill = |text: &str| vars(text).replace("{{export}}", export_name(kind));
    let (app, manifest) = match kind {
        // The bundled guard's name appears in its comments, reasons and config examples.
        Kind::Guard => (
            GUARD.replace("guard-js", name),
            GUARD_MANIFEST.replace("guard-js", name),
        ),
        Kind::Detector => (DETECTOR.to_string(), fill(RUST_MANIFEST)),
        Kind::Converter => (CONVERTER.to_string(), fill(RUST_MANIFEST)),
        Kind::Transport => {
            return Err(UsageError(format!(
                "no JavaScript template for a {}: the JavaScript engine inside a componentize-js component has no socket API, so it cannot open the connection a transport makes; use --lang rust for {}",
                kind.text(),
                kind.arg()
            )));
        }
    };
    let mut files = vec![
        file("app.js", app),
        file(format!("{name}.toml"), manifest),
        File {
            rel: "build.sh".into(),
            text: fill(BUILD),
            executable: true,
        },
        file("README.md", fill(README)),
        file(".gitignore", "*.wasm\nnode_modules/\n"),
    ];
    for (wit, text) in WIT {
        files.push(file(Path::new("wit").join(wit), *text));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::super::{Lang, scaffold};
    use super::*;

    #[test]
    fn transport_is_refused_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("t");
        let err = scaffold(Kind::Transport, "t", Lang::Js, Some(dir.clone()), None)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("no socket API"), "{err}");
        assert!(!dir.exists());
    }

    /// The guard template is the bundled plugin under the new name: nothing of guard-js's
    /// name is left to confuse a reason or a config key.
    #[test]
    fn guard_speaks_with_the_project_name() {
        let files = files(Kind::Guard, "my-rules", &|t: &str| t.to_string()).unwrap();
        let text = |rel: &str| {
            files
                .iter()
                .find(|f| f.rel == Path::new(rel))
                .map(|f| f.text.clone())
                .unwrap_or_else(|| panic!("{rel} not generated"))
        };
        assert!(!text("app.js").contains("guard-js"));
        assert!(text("app.js").contains("const NAME = \"my-rules\";"));
        assert!(text("my-rules.toml").contains("default = \"ask\""));
        assert!(text("build.sh").starts_with("#!/usr/bin/env bash"));
    }
}
