//! `rkmcp plugins install PATH` and `rkmcp plugins grant NAME …`: a component into the user's
//! plugin folder, and a grant into the user's config.
//!
//! Installing grants nothing: it shows what the plugin's manifest requests and the exact
//! `[plugins.grants.NAME]` that would grant it. `grant` edits the config with `toml_edit`, so the
//! user's comments, order and formatting survive (a serde round trip would drop them).
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use rkmcp_plugin_host::{PluginHost, PluginInfo};
use rkmcp_term_safe::sanitize_inline as clean;

use super::UsageError;

/// `$XDG_DATA_HOME/rkmcp/plugins`, the folder rkmcp searches first.
pub fn user_plugin_dir() -> anyhow::Result<PathBuf> {
    dirs::data_dir()
        .map(|d| d.join("rkmcp").join("plugins"))
        .ok_or_else(|| UsageError("no user data folder: set XDG_DATA_HOME or HOME".into()).into())
}

/// `$XDG_CONFIG_HOME/rkmcp/config.toml`, unless `--config` names another file.
pub fn user_config_file(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    dirs::config_dir()
        .map(|d| d.join("rkmcp").join("config.toml"))
        .ok_or_else(|| {
            UsageError("no user config folder: set XDG_CONFIG_HOME or HOME".into()).into()
        })
}

/// Copies `src` to `dest` through a temporary file and a rename, so a running rkmcp never loads
/// a half-written component.
fn copy_atomic(src: &Path, dest: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let part = dest.with_extension("part");
    std::fs::copy(src, &part)
        .map_err(|e| anyhow::anyhow!("cannot copy {} to {}: {e}", src.display(), part.display()))?;
    std::fs::set_permissions(&part, std::fs::Permissions::from_mode(0o600))?;
    std::fs::rename(&part, dest)
        .map_err(|e| anyhow::anyhow!("cannot move {} into place: {e}", dest.display()))
}

/// The `[plugins.grants.NAME]` that grants everything the manifest requests.
pub fn grant_snippet(info: &PluginInfo) -> Option<String> {
    let r = &info.manifest.as_ref()?.requests;
    if r.files.is_empty() && r.network.is_empty() && r.env.is_empty() && r.memory_mb.is_none() {
        return None;
    }
    let quote = |v: &[String]| {
        v.iter()
            .map(|s| {
                toml_edit::Value::from(s.as_str())
                    .to_string()
                    .trim()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!("[plugins.grants.{}]\n", info.name);
    if !r.network.is_empty() {
        s += &format!("network = [{}]\n", quote(&r.network));
    }
    if !r.env.is_empty() {
        s += &format!("env = [{}]\n", quote(&r.env));
    }
    if let Some(mb) = r.memory_mb {
        s += &format!("memory_mb = {mb}\n");
    }
    for f in &r.files {
        let mode = match f.mode {
            rkmcp_plugin_host::FileMode::Ro => "ro",
            rkmcp_plugin_host::FileMode::Rw => "rw",
        };
        s += &format!(
            "files = [{{ host = \"/a/host/folder\", guest = {}, mode = \"{mode}\" }}]  # choose the host folder\n",
            toml_edit::Value::from(f.guest.as_str()).to_string().trim()
        );
    }
    Some(s)
}

pub fn install(host: &PluginHost, path: &Path, replace: bool) -> anyhow::Result<()> {
    if !path.is_file() {
        return Err(UsageError(format!("{}: no such file", path.display())).into());
    }
    // Refuses files that are not rkmcp components, with the reason (not wasm, no export, …).
    let info = host
        .inspect(path)
        .map_err(|e| UsageError(format!("{} cannot be installed: {e}", path.display())))?;
    let dir = user_plugin_dir()?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create the plugin folder {}: {e}", dir.display()))?;
    {
        // rkmcp refuses plugin folders others can write to: make ours private.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| anyhow::anyhow!("cannot make {} private: {e}", dir.display()))?;
    }
    let name = &info.name;
    let dest = dir.join(format!("{name}.wasm"));
    if dest.exists() && !replace {
        return Err(UsageError(format!(
            "a plugin named {} is already installed at {}; pass --replace to overwrite it, or rename the file to install it beside",
            clean(name),
            dest.display()
        ))
        .into());
    }
    let manifest = path.with_extension("toml");
    let dest_manifest = dir.join(format!("{name}.toml"));
    if manifest.is_file() {
        copy_atomic(&manifest, &dest_manifest)?;
    } else if dest_manifest.exists() {
        // The old version's manifest would describe a plugin that is no longer there.
        std::fs::remove_file(&dest_manifest).map_err(|e| {
            anyhow::anyhow!("cannot remove the old {}: {e}", dest_manifest.display())
        })?;
    }
    copy_atomic(path, &dest)?;
    println!(
        "installed {} ({}) to {}",
        clean(name),
        info.kind.map_or("-".to_string(), |k| k.to_string()),
        dest.display()
    );
    let r = info
        .manifest
        .as_ref()
        .map(|m| m.requests.clone())
        .unwrap_or_default();
    let files: Vec<String> = r
        .files
        .iter()
        .map(|f| clean(&f.guest).to_string())
        .collect();
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|s| clean(s).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    println!(
        "requests:  files: {}; network: {}; env: {}",
        list(&files),
        list(&r.network),
        list(&r.env)
    );
    let g = &info.grants;
    if g.files.is_empty() && g.network.is_empty() && g.env.is_empty() {
        println!("granted:   nothing (no files, no network, no environment)");
    } else {
        println!(
            "granted:   files: {}; network: {}; env: {}",
            list(&g.files),
            list(&g.network),
            list(&g.env)
        );
    }
    if let Some(snippet) = grant_snippet(&info) {
        println!(
            "To grant what it requests, add to your config (or run `rkmcp plugins grant {name} …`):\n"
        );
        print!("{snippet}");
    }
    Ok(())
}

/// What `plugins grant` adds.
pub struct GrantRequest {
    pub name: String,
    pub network: Vec<String>,
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub env: Vec<String>,
    pub yes: bool,
}

/// `HOST[:GUEST]`: the guest path defaults to the host path (absolute).
fn file_entry(spec: &str, mode: &str) -> anyhow::Result<toml_edit::InlineTable> {
    let (host, guest) = match spec.split_once(':') {
        Some((h, g)) => (h, Some(g)),
        None => (spec, None),
    };
    let host = std::fs::canonicalize(host).map_err(|e| {
        UsageError(format!(
            "--{}: {host}: {e} (grant an existing folder)",
            if mode == "ro" { "read" } else { "write" }
        ))
    })?;
    let guest = guest
        .map(str::to_string)
        .unwrap_or_else(|| host.display().to_string());
    if !guest.starts_with('/') {
        return Err(UsageError(format!("guest path {guest:?} must be absolute")).into());
    }
    let mut t = toml_edit::InlineTable::new();
    t.insert("host", host.display().to_string().into());
    t.insert("guest", guest.into());
    t.insert("mode", mode.into());
    Ok(t)
}

/// Appends the values not already there, keeping the array's own formatting.
fn add_strings(table: &mut toml_edit::Table, key: &str, values: &[String]) -> anyhow::Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let item = table
        .entry(key)
        .or_insert(toml_edit::value(toml_edit::Array::new()));
    let Some(array) = item.as_array_mut() else {
        return Err(UsageError(format!(
            "`{key}` in the grant is not an array: fix it by hand first"
        ))
        .into());
    };
    for v in values {
        if !array.iter().any(|x| x.as_str() == Some(v)) {
            array.push(v.as_str());
        }
    }
    Ok(())
}

fn sub_table<'a>(parent: &'a mut toml_edit::Table, key: &str) -> Option<&'a mut toml_edit::Table> {
    let fresh = !parent.contains_key(key);
    let t = parent
        .entry(key)
        .or_insert(toml_edit::table())
        .as_table_mut()?;
    if fresh {
        t.set_implicit(true);
    }
    Some(t)
}

pub fn grant(config: &Path, req: &GrantRequest) -> anyhow::Result<()> {
    if req.network.is_empty() && req.read.is_empty() && req.write.is_empty() && req.env.is_empty() {
        return Err(UsageError(
            "nothing to grant: give --network, --read, --write or --env".into(),
        )
        .into());
    }
    let text = match std::fs::read_to_string(config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", config.display())),
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        UsageError(format!(
            "{} is not valid TOML, so it is left alone: {e}",
            config.display()
        ))
    })?;
    // Tables rkmcp adds on the way are implicit (no `[plugins]` header of their own); the
    // user's own tables keep theirs.
    let table = sub_table(doc.as_table_mut(), "plugins")
        .and_then(|p| sub_table(p, "grants"))
        .and_then(|g| sub_table(g, &req.name))
        .ok_or_else(|| {
            UsageError(format!(
                "{}: [plugins.grants.{}] is written in a form rkmcp cannot extend (an inline table?): edit it by hand",
                config.display(),
                req.name
            ))
        })?;
    add_strings(table, "network", &req.network)?;
    add_strings(table, "env", &req.env)?;
    if !req.read.is_empty() || !req.write.is_empty() {
        let item = table
            .entry("files")
            .or_insert(toml_edit::value(toml_edit::Array::new()));
        let Some(array) = item.as_array_mut() else {
            return Err(UsageError(
                "`files` in the grant is not an array: fix it by hand first".into(),
            )
            .into());
        };
        for (specs, mode) in [(&req.read, "ro"), (&req.write, "rw")] {
            for spec in specs {
                array.push(file_entry(spec, mode)?);
            }
        }
    }
    let shown = doc
        .get("plugins")
        .and_then(|p| p.get("grants"))
        .and_then(|g| g.get(&req.name))
        .map(|t| t.to_string())
        .unwrap_or_default();
    println!(
        "[plugins.grants.{}] in {} will be:\n{}",
        req.name,
        config.display(),
        shown.trim_end()
    );
    if !req.yes {
        if !std::io::stdin().is_terminal() {
            return Err(UsageError(
                "not asking without a terminal: pass --yes to write the grant".into(),
            )
            .into());
        }
        print!("Write it? [y/N] ");
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("not written");
            return Ok(());
        }
    }
    if let Some(parent) = config.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            anyhow::anyhow!(
                "cannot create {} for the config: {e}; fix its permissions or pass --config FILE",
                parent.display()
            )
        })?;
    }
    // Write beside and rename: an interrupted write never leaves half a config behind.
    let part = config.with_extension("toml.part");
    std::fs::write(&part, doc.to_string())
        .and_then(|()| std::fs::rename(&part, config))
        .map_err(|e| {
            let _ = std::fs::remove_file(&part);
            anyhow::anyhow!(
                "cannot write {}: {e}; fix its folder's permissions or pass --config FILE",
                config.display()
            )
        })?;
    println!(
        "written to {}; it applies from the next load of {}",
        config.display(),
        req.name
    );
    Ok(())
}
