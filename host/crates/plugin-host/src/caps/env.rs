//! Environment: only the granted names that are set on the host; no arguments.
use anyhow::bail;

use super::{Apply, Capability, ResolveCx, StoreSetup};
use crate::config::Grant;
use crate::grants::filter_env;

/// `env = ["NAME", …]`: host environment variables the plugin may read.
pub struct Env;

impl Capability for Env {
    fn key(&self) -> &'static str {
        "env"
    }

    fn check(&self, grant: &Grant) -> anyhow::Result<()> {
        for name in &grant.env {
            if name.is_empty() || name.contains(['=', '\0']) {
                bail!("{name:?} is not an environment variable name");
            }
        }
        Ok(())
    }

    fn resolve(&self, cx: &ResolveCx<'_>) -> anyhow::Result<Box<dyn Apply>> {
        Ok(Box::new(Granted(cx.grant.env.clone())))
    }

    fn summary(&self, grant: &Grant) -> Vec<String> {
        grant.env.clone()
    }
}

/// The granted names. Values are read when a store is built, so a plugin sees the host's
/// environment as it is now, not as it was when the plugin loaded.
struct Granted(Vec<String>);

impl Apply for Granted {
    fn apply(&self, store: &mut StoreSetup<'_>) -> anyhow::Result<()> {
        for (name, value) in filter_env(&self.0, |n| std::env::var(n).ok()) {
            store.wasi.env(name, value);
        }
        Ok(())
    }
}
