//! Filesystem: granted host directories as WASI preopens. The host path is canonicalised first
//! (so a grant naming `a/../b` or a symlink grants the real directory); inside the preopen,
//! wasmtime-wasi's capability-based directory handles refuse `..` and symlinks that leave it.
use std::path::PathBuf;

use anyhow::{Context, bail};
use wasmtime_wasi::FsPerms;

use super::{Apply, Capability, ResolveCx, StoreSetup};
use crate::config::{FileGrant, FileMode, Grant};
use crate::grants::check_guest_path;
use crate::trust::{Protected, grant_conflict};

/// `files = [{ host, guest, mode }]`: host directories the plugin sees.
pub struct Files;

impl Capability for Files {
    fn key(&self) -> &'static str {
        "files"
    }

    fn check(&self, grant: &Grant) -> anyhow::Result<()> {
        for f in &grant.files {
            check_guest_path(&f.guest).map_err(anyhow::Error::msg)?;
        }
        Ok(())
    }

    fn resolve(&self, cx: &ResolveCx<'_>) -> anyhow::Result<Box<dyn Apply>> {
        Ok(Box::new(Preopens(resolve(&cx.grant.files, cx.protected)?)))
    }

    fn summary(&self, grant: &Grant) -> Vec<String> {
        grant
            .files
            .iter()
            .map(|f| {
                let mode = match f.mode {
                    FileMode::Ro => "ro",
                    FileMode::Rw => "rw",
                };
                format!("{} -> {} ({mode})", f.host.display(), f.guest)
            })
            .collect()
    }
}

/// A file grant after checking: the real host directory and the guest path.
#[derive(Debug, Clone)]
pub struct Preopen {
    pub host: PathBuf,
    pub guest: String,
    pub mode: FileMode,
}

/// Checks each directory against the system: it exists, is a directory, and reaches no
/// protected folder. Errors are named by the caller (`[plugins.grants.NAME] files: …`).
pub fn resolve(grants: &[FileGrant], protected: &[Protected]) -> anyhow::Result<Vec<Preopen>> {
    let mut out: Vec<Preopen> = Vec::new();
    for g in grants {
        check_guest_path(&g.guest).map_err(anyhow::Error::msg)?;
        let host = std::fs::canonicalize(&g.host)
            .with_context(|| format!("host directory {} is not usable", g.host.display()))?;
        if !host.is_dir() {
            bail!("{} is not a directory", host.display());
        }
        if let Some(p) = grant_conflict(&host, g.mode == FileMode::Rw, protected) {
            let how = if p.no_read { "any" } else { "read-write" };
            bail!(
                "{} overlaps {} ({}); {how} access there would let a plugin {}. Grant a folder that neither contains it nor lies inside it",
                host.display(),
                p.what,
                p.path.display(),
                if p.no_read {
                    "read secrets"
                } else {
                    "replace code that rkmcp runs"
                }
            );
        }
        let guest = if g.guest.len() > 1 {
            g.guest.trim_end_matches('/').to_string()
        } else {
            g.guest.clone()
        };
        if out.iter().any(|p| p.guest == guest) {
            bail!("guest path {guest} is granted twice");
        }
        out.push(Preopen {
            host,
            guest,
            mode: g.mode,
        });
    }
    Ok(out)
}

/// The checked directories of one plugin's grant.
struct Preopens(Vec<Preopen>);

impl Apply for Preopens {
    fn apply(&self, store: &mut StoreSetup<'_>) -> anyhow::Result<()> {
        apply(store.wasi, &self.0)
    }
}

fn apply(builder: &mut wasmtime_wasi::WasiCtxBuilder, preopens: &[Preopen]) -> anyhow::Result<()> {
    for p in preopens {
        let perms = match p.mode {
            FileMode::Ro => FsPerms::ReadOnly,
            FileMode::Rw => FsPerms::ReadWrite,
        };
        builder
            .preopened_dir(&p.host, &p.guest, perms)
            .map_err(|e| {
                anyhow::Error::from(e).context(format!(
                    "cannot open granted directory {}",
                    p.host.display()
                ))
            })?;
    }
    Ok(())
}
