//! Finding `librkllmrt.so`, reading which release it is, and opening it with the functions of
//! that release's layout.
use std::ffi::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};

use super::abi::{self, Abi, Functions, INSTALL_HINT, Symbols};
use crate::LlmError;
use crate::config::AbiSetting;
use crate::sys;

const LIB_NAME: &str = "librkllmrt.so";

/// Library files to try, in order, for an explicit path (flag, env or config) or none.
pub fn candidate_paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(path) = explicit {
        return vec![path.to_path_buf()];
    }
    if let Some(env) = std::env::var_os("RKLLM_LIB").filter(|v| !v.is_empty()) {
        return vec![PathBuf::from(env)];
    }
    let mut dirs: Vec<PathBuf> = [
        "/usr/lib",
        "/usr/local/lib",
        "/usr/lib/aarch64-linux-gnu",
        "/lib",
        "/opt/lib",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Some(ld) = std::env::var_os("LD_LIBRARY_PATH") {
        dirs.extend(std::env::split_paths(&ld).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs.into_iter().map(|d| d.join(LIB_NAME)).collect()
}

/// The library file to open: the first candidate that exists.
pub fn find_library(explicit: Option<&Path>) -> Result<PathBuf, LlmError> {
    let candidates = candidate_paths(explicit);
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    Err(LlmError::RkllmLibrary(format!(
        "the RKLLM runtime was not found; tried: {}. {INSTALL_HINT}",
        tried.join(", ")
    )))
}

/// Reads the runtime version embedded in the library file, without running any of its code.
///
/// The runtime logs `rkllm-runtime version: X.Y.Z` at start-up, so that text (or the format string
/// and the number stored on its own) is in the file. A bare `X.Y.Z` is used only when it is the
/// only 1.x version in the file. Beta suffixes (`1.2.1b1`) are kept.
pub fn detect_version(path: &Path) -> Result<Option<String>, std::io::Error> {
    let bytes = std::fs::read(path)?;
    let strings = printable_strings(&bytes);
    const MARKER: &str = "rkllm-runtime version";
    for s in &strings {
        if let Some(pos) = s.find(MARKER) {
            let rest = s[pos + MARKER.len()..].trim_start_matches([':', ' ', 'v']);
            if let Some(v) = leading_version(rest) {
                return Ok(Some(v));
            }
        }
    }
    let mut bare: Vec<String> = strings
        .iter()
        .filter_map(|s| {
            let s = s.trim().trim_start_matches('v');
            (leading_version(s).as_deref() == Some(s) && s.starts_with("1.")).then(|| s.to_string())
        })
        .collect();
    bare.sort();
    bare.dedup_by(|a, b| abi::parse_version(a) == abi::parse_version(b));
    Ok(if bare.len() == 1 { bare.pop() } else { None })
}

fn printable_strings(bytes: &[u8]) -> Vec<&str> {
    bytes
        .split(|b| !(0x20..0x7f).contains(b))
        .filter(|s| s.len() >= 5)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .collect()
}

/// `X.Y.Z` (digits) with an optional letter-and-digit suffix such as `b1`, at the start of `s`.
fn leading_version(s: &str) -> Option<String> {
    let numeric = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let v = s[..numeric].trim_end_matches('.');
    let parts: Vec<&str> = v.split('.').collect();
    if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let rest = &s[v.len()..];
    let suffix_len = rest
        .char_indices()
        .take_while(|(i, c)| c.is_ascii_digit() || (*i == 0 && c.is_ascii_lowercase()))
        .count();
    let suffix = &rest[..suffix_len];
    // Only a letter followed by digits counts (`b1`, `rc2`-like); a lone letter is not part of it.
    let suffix = if suffix.len() >= 2 { suffix } else { "" };
    Some(format!("{v}{suffix}"))
}

/// The optional symbols that tell releases apart.
fn symbols(lib: &libloading::Library) -> Symbols {
    // SAFETY: only checks that the symbols exist; the pointers are not used.
    let has = |name: &str| unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_ok();
    Symbols {
        set_chat_template: has("rkllm_set_chat_template"),
        set_function_tools: has("rkllm_set_function_tools"),
    }
}

pub(super) type HandleFn = unsafe extern "C" fn(sys::LLMHandle) -> c_int;
pub(super) type ThreeStrFn =
    unsafe extern "C" fn(sys::LLMHandle, *const c_char, *const c_char, *const c_char) -> c_int;

/// An opened `librkllmrt.so` with its functions resolved for its layout.
pub struct RkllmLibrary {
    pub path: PathBuf,
    /// The layout in use (see [`Abi::releases`] for the releases it covers).
    pub abi: Abi,
    /// The version string the file carries, if any.
    pub version: Option<String>,
    pub(super) functions: Functions,
    pub(super) abort: HandleFn,
    pub(super) destroy: HandleFn,
    pub(super) is_running: Option<HandleFn>,
    pub(super) set_chat_template: Option<ThreeStrFn>,
    pub(super) set_function_tools: Option<ThreeStrFn>,
    // Declared last: dropped after the function pointers above, which point into it.
    _lib: libloading::Library,
}

impl std::fmt::Debug for RkllmLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RkllmLibrary")
            .field("path", &self.path)
            .field("abi", &self.abi)
            .field("version", &self.version)
            .finish()
    }
}

const REQUIRED: [&str; 5] = [
    "rkllm_createDefaultParam",
    "rkllm_init",
    "rkllm_run",
    "rkllm_abort",
    "rkllm_destroy",
];

impl RkllmLibrary {
    /// Opens the library at `path` (see [`find_library`]); the layout comes from `setting`, the
    /// version string in the file and the symbols it exports ([`abi::choose`]).
    pub fn open(path: &Path, setting: AbiSetting) -> Result<Self, LlmError> {
        if !path.is_file() {
            return Err(LlmError::RkllmLibrary(format!(
                "{} does not exist. {INSTALL_HINT}",
                path.display()
            )));
        }
        // Read before loading: a refused runtime's initialisers never run.
        let version = detect_version(path)
            .map_err(|e| LlmError::RkllmLibrary(format!("cannot read {}: {e}", path.display())))?;
        // SAFETY: loading runs the library's initialisers; the user chose this file as the RKLLM
        // runtime. There is no way to load native code without trusting it.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
            LlmError::RkllmLibrary(format!(
                "cannot load {}: {e}. {INSTALL_HINT}",
                path.display()
            ))
        })?;
        let missing: Vec<&str> = REQUIRED
            .iter()
            .copied()
            // SAFETY: only checks that the symbol exists; the pointer is not used.
            .filter(|name| unsafe { lib.get::<*const c_void>(name.as_bytes()) }.is_err())
            .collect();
        if !missing.is_empty() {
            return Err(LlmError::RkllmLibrary(format!(
                "{} is not the RKLLM runtime: it does not export {}. {INSTALL_HINT}",
                path.display(),
                missing.join(", ")
            )));
        }
        let abi = abi::choose(setting, version.as_deref(), symbols(&lib))
            .map_err(|refusal| LlmError::RkllmLibrary(refusal.message(path)))?;
        let vanished = |name: &str| {
            LlmError::RkllmLibrary(format!("{}: symbol {name} vanished", path.display()))
        };
        // SAFETY (all lookups below): the names are the RKLLM API and the types are those of the
        // layout chosen above; a wrong layout is what `choose` guards against.
        unsafe {
            let functions = Functions::resolve(abi, &lib).map_err(vanished)?;
            let sym = |name: &str| lib.get::<HandleFn>(name.as_bytes()).ok().map(|s| *s);
            let three = |name: &str| lib.get::<ThreeStrFn>(name.as_bytes()).ok().map(|s| *s);
            Ok(Self {
                path: path.to_path_buf(),
                abi,
                version,
                functions,
                abort: sym("rkllm_abort").ok_or_else(|| vanished("rkllm_abort"))?,
                destroy: sym("rkllm_destroy").ok_or_else(|| vanished("rkllm_destroy"))?,
                is_running: sym("rkllm_is_running"),
                set_chat_template: three("rkllm_set_chat_template"),
                set_function_tools: three("rkllm_set_function_tools"),
                _lib: lib,
            })
        }
    }

    pub fn has_function_tools(&self) -> bool {
        self.set_function_tools.is_some()
    }

    /// "layout 1.2.1 (releases 1.2.1–1.2.3), version 1.2.2" — for `doctor` and backend info.
    pub fn describe(&self) -> String {
        format!(
            "layout {} (release{} {}), version {}",
            self.abi,
            if self.abi.releases().contains('–') {
                "s"
            } else {
                ""
            },
            self.abi.releases(),
            self.version.as_deref().unwrap_or("not in the file")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::leading_version;

    #[test]
    fn versions_keep_beta_suffixes() {
        assert_eq!(
            leading_version("1.2.1b1, rknpu").as_deref(),
            Some("1.2.1b1")
        );
        assert_eq!(leading_version("1.3.0, rknpu").as_deref(), Some("1.3.0"));
        assert_eq!(
            leading_version("1.3.0 (TEST DOUBLE)").as_deref(),
            Some("1.3.0")
        );
        assert_eq!(leading_version("1.3.0x").as_deref(), Some("1.3.0"));
        assert_eq!(leading_version("1.3"), None);
    }
}
