//! What a grant can give a plugin, one module per capability (files, network, environment).
//!
//! Each capability owns its whole life, so adding one touches its module, its field in
//! [`Grant`] (the grant table) and the list [`ALL`], and nothing in the host:
//! - **check**: its part of `[plugins.grants.NAME]` is checked when the host starts, so a bad
//!   grant is a config error before any plugin loads;
//! - **resolve**: on each load it becomes what the host enforces (paths canonicalised against
//!   the protected folders, patterns parsed);
//! - **apply**: every fresh store of the plugin gets it, in its WASI context;
//! - **summary**: what `rkmcp plugins` shows as granted.
//!
//! Nothing is switched on unless the grant says so: a capability that finds its part of the
//! grant empty applies nothing (wasmtime-wasi gives a store no files, no sockets and no
//! environment by default; [`net`] switches sockets off explicitly as well).
//!
//! Limits (memory, call deadline, fuel, output size) are not capabilities: they open nothing in
//! the sandbox and every plugin has them, see [`crate::plugin::Settings`]. Nor is [`stdio`]:
//! every plugin's stdout and stderr go to rkmcp's log, rate-limited, whatever it is granted.
use std::sync::Arc;

use anyhow::Context as _;
use wasmtime_wasi::WasiCtxBuilder;

use crate::config::Grant;
use crate::trust::Protected;

pub mod env;
pub mod fs;
pub mod net;
pub mod stdio;

/// One capability a grant can give.
pub trait Capability: Sync {
    /// Its key in `[plugins.grants.NAME]`, used in messages and summaries.
    fn key(&self) -> &'static str;

    /// Checks its part of a grant without touching the system (run for every grant at start).
    fn check(&self, grant: &Grant) -> anyhow::Result<()>;

    /// Turns its part of a plugin's grant into what each store of that plugin gets.
    fn resolve(&self, cx: &ResolveCx<'_>) -> anyhow::Result<Box<dyn Apply>>;

    /// What is granted, one entry per item (empty: nothing).
    fn summary(&self, grant: &Grant) -> Vec<String>;
}

/// A resolved capability, applied to every fresh store of one plugin.
pub trait Apply: Send + Sync {
    fn apply(&self, store: &mut StoreSetup<'_>) -> anyhow::Result<()>;
}

/// What [`Capability::resolve`] may look at.
pub struct ResolveCx<'a> {
    pub plugin: &'a str,
    pub grant: &'a Grant,
    /// Folders no file grant may reach.
    pub protected: &'a [Protected],
}

/// A store being built: its WASI context, and the per-store state that host hooks outside
/// WASI consult (the name-lookup guard reads [`net::StoreNet`]).
pub struct StoreSetup<'a> {
    pub plugin: &'a Arc<str>,
    pub wasi: &'a mut WasiCtxBuilder,
    pub net: &'a mut net::StoreNet,
}

/// Every capability, in the order summaries show them.
pub static ALL: &[&dyn Capability] = &[&fs::Files, &net::Network, &env::Env];

/// Checks every capability's part of `grant`; errors name the grant and the key.
pub fn check(plugin: &str, grant: &Grant) -> anyhow::Result<()> {
    for cap in ALL {
        cap.check(grant)
            .with_context(|| format!("[plugins.grants.{plugin}] {}", cap.key()))?;
    }
    Ok(())
}

/// A plugin's grant resolved by every capability, ready to apply to its stores.
pub struct Granted(Vec<Box<dyn Apply>>);

impl Granted {
    pub fn resolve(cx: &ResolveCx<'_>) -> anyhow::Result<Granted> {
        ALL.iter()
            .map(|cap| {
                cap.resolve(cx)
                    .with_context(|| format!("[plugins.grants.{}] {}", cx.plugin, cap.key()))
            })
            .collect::<anyhow::Result<_>>()
            .map(Granted)
    }

    pub fn apply(&self, store: &mut StoreSetup<'_>) -> anyhow::Result<()> {
        self.0.iter().try_for_each(|cap| cap.apply(store))
    }
}

/// What each capability grants, by key, in [`ALL`]'s order.
pub fn summary(grant: &Grant) -> Vec<(&'static str, Vec<String>)> {
    ALL.iter()
        .map(|cap| (cap.key(), cap.summary(grant)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_grant_table_fields_and_unique() {
        let keys: Vec<&str> = ALL.iter().map(|c| c.key()).collect();
        assert_eq!(keys, ["files", "network", "env"]);
        // Each key must be a field of `[plugins.grants.NAME]`: a grant naming it parses.
        for key in keys {
            let text = format!("{key} = []");
            let parsed: Result<Grant, _> = toml::from_str(&text);
            assert!(parsed.is_ok(), "`{key}` is not a grant field: {parsed:?}");
        }
    }

    #[test]
    fn an_empty_grant_grants_nothing() {
        for (key, items) in summary(&Grant::default()) {
            assert!(items.is_empty(), "{key} grants {items:?} by default");
        }
        check("p", &Grant::default()).expect("an empty grant is valid");
    }

    #[test]
    fn a_bad_part_is_named_with_its_grant_and_key() {
        let grant = Grant {
            network: vec!["no port here".into()],
            ..Grant::default()
        };
        let err = format!("{:#}", check("web", &grant).expect_err("bad pattern"));
        assert!(err.starts_with("[plugins.grants.web] network: "), "{err}");
        let grant = Grant {
            files: vec![crate::config::FileGrant {
                host: ".".into(),
                guest: "relative".into(),
                mode: crate::config::FileMode::Ro,
            }],
            ..Grant::default()
        };
        let err = format!("{:#}", check("notes", &grant).expect_err("bad guest path"));
        assert!(err.starts_with("[plugins.grants.notes] files: "), "{err}");
    }
}
