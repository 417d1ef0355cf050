//! The config crate's parsing modules (`host/crates/config`), compiled in from their source.
//! `ConfigError` stands in for the one in its `lib.rs` (a message and a position, formatted alike).
use std::path::Path;

#[derive(Debug, Clone)]
pub struct ConfigError {
    pub message: String,
}

impl ConfigError {
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError {
            message: message.into(),
        }
    }

    pub fn at(path: &Path, line: usize, col: usize, key: Option<String>, m: String) -> Self {
        ConfigError::new(format!("{}:{line}:{col} {key:?}: {m}", path.display()))
    }
}

#[path = "../../../host/crates/config/src/file.rs"]
pub mod file;
#[path = "../../../host/crates/config/src/raw.rs"]
pub mod raw;
#[path = "../../../host/crates/config/src/subst.rs"]
pub mod subst;
