//! Filesystem: granted host directories as WASI preopens. The host path is canonicalised first
//! (so a grant naming `a/../b` or a symlink grants the real directory); inside the preopen,
//! wasmtime-wasi's capability-based directory handles refuse `..` and symlinks that leave it.
use std::path::PathBuf;

use anyhow::{Context, bail};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::config::{FileGrant, FileMode};
use crate::grants::check_guest_path;
use crate::trust::{Protected, grant_conflict};

/// A file grant after checking: the real host directory and the guest path.
#[derive(Debug, Clone)]
pub struct Preopen {
    pub host: PathBuf,
    pub guest: String,
    pub mode: FileMode,
}

pub fn resolve(
    plugin: &str,
    grants: &[FileGrant],
    protected: &[Protected],
) -> anyhow::Result<Vec<Preopen>> {
    let mut out: Vec<Preopen> = Vec::new();
    for g in grants {
        check_guest_path(&g.guest)
            .map_err(|e| anyhow::anyhow!("plugin `{plugin}` file grant: {e}"))?;
        let host = std::fs::canonicalize(&g.host).with_context(|| {
            format!(
                "plugin `{plugin}` file grant: host directory {} is not usable",
                g.host.display()
            )
        })?;
        if !host.is_dir() {
            bail!(
                "plugin `{plugin}` file grant: {} is not a directory",
                host.display()
            );
        }
        if let Some(p) = grant_conflict(&host, g.mode == FileMode::Rw, protected) {
            let how = if p.no_read { "any" } else { "read-write" };
            bail!(
                "plugin `{plugin}` file grant: {} overlaps {} ({}); {how} access there would let a plugin {}. Grant a folder that neither contains it nor lies inside it",
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
            bail!("plugin `{plugin}` file grant: guest path {guest} is granted twice");
        }
        out.push(Preopen {
            host,
            guest,
            mode: g.mode,
        });
    }
    Ok(out)
}

pub fn apply(builder: &mut WasiCtxBuilder, preopens: &[Preopen]) -> anyhow::Result<()> {
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
