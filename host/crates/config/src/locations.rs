//! Where config files are looked for, and in which order they are merged.
use std::path::PathBuf;

use super::ConfigError;

/// Where config files are looked for.
#[derive(Debug, Clone, Default)]
pub struct Locations {
    /// `--config FILE`.
    pub explicit: Option<PathBuf>,
    /// The workspace directory (the current directory).
    pub workspace: PathBuf,
    /// The user's config file, if it should be read.
    pub user: Option<PathBuf>,
}

impl Locations {
    pub fn from_env(explicit: Option<PathBuf>) -> Locations {
        Locations {
            explicit,
            workspace: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            user: dirs::config_dir().map(|d| d.join("rkmcp").join("config.toml")),
        }
    }

    /// The files that will be read, lowest precedence first.
    pub fn files(&self) -> Result<Vec<PathBuf>, ConfigError> {
        let mut files = Vec::new();
        if let Some(user) = &self.user
            && user.is_file()
        {
            files.push(user.clone());
        }
        if let Some(explicit) = &self.explicit {
            if !explicit.is_file() {
                return Err(ConfigError::new(format!(
                    "config file {} does not exist (given with --config or RKMCP_CONFIG)",
                    explicit.display()
                )));
            }
            files.push(explicit.clone());
        } else {
            for candidate in [
                self.workspace.join("rkmcp.toml"),
                self.workspace.join(".rkmcp").join("config.toml"),
            ] {
                if candidate.is_file() {
                    files.push(candidate);
                    break;
                }
            }
        }
        Ok(files)
    }
}
