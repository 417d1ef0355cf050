//! `rkmcp plugins install PATH` and `rkmcp plugins grant NAME …`: a component into the user's
//! plugin folder, and a grant into the user's config.
//!
//! Installing grants nothing: it shows what the plugin's manifest requests and the exact
//! `[plugins.grants.NAME]` that would grant it. `grant` edits the config with `toml_edit`, so the
//! user's comments, order and formatting survive (a serde round trip would drop them).
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use rkmcp_plugin_host::lock::{grant_lines, short};
use rkmcp_plugin_host::{
    FileMode, PendingApproval, PluginHost, PluginInfo, PluginStatus, PluginsConfig,
};
use rkmcp_term_safe::sanitize_inline as clean;

use super::UsageError;

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

/// `NAME` as a TOML key: bare when it can be (`my-guard`), quoted otherwise.
fn key(name: &str) -> String {
    toml_edit::Key::new(name).display_repr().into_owned()
}

/// A TOML string literal.
fn quoted(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// The `[plugins.grants.NAME]` that grants everything the manifest requests.
pub fn grant_snippet(info: &PluginInfo) -> Option<String> {
    let r = &info.manifest.as_ref()?.requests;
    if r.files.is_empty() && r.network.is_empty() && r.env.is_empty() && r.memory_mb.is_none() {
        return None;
    }
    let list = |v: &[String]| v.iter().map(|s| quoted(s)).collect::<Vec<_>>().join(", ");
    let mut s = format!("[plugins.grants.{}]\n", key(&info.name));
    if !r.network.is_empty() {
        s += &format!("network = [{}]\n", list(&r.network));
    }
    if !r.env.is_empty() {
        s += &format!("env = [{}]\n", list(&r.env));
    }
    if let Some(mb) = r.memory_mb {
        s += &format!("memory_mb = {mb}\n");
    }
    if !r.files.is_empty() {
        // Only the plugin's side of a file grant is known: which host folder it sees is the
        // user's choice, so the snippet says so instead of inventing one.
        s += "files = [\n";
        for f in &r.files {
            let why = f
                .why
                .as_deref()
                .map(|w| format!(" ({})", clean(w)))
                .unwrap_or_default();
            s += &format!(
                "    {{ host = \"/a/folder/you/choose\", guest = {}, mode = \"{}\" }},  # set host{why}\n",
                quoted(&f.guest),
                mode_name(f.mode)
            );
        }
        s += "]\n";
    }
    Some(s)
}

fn mode_name(mode: FileMode) -> &'static str {
    match mode {
        FileMode::Ro => "ro",
        FileMode::Rw => "rw",
    }
}

/// The folder `install` writes to: the first one rkmcp searches, so the installed plugin is
/// the one that loads (an earlier folder wins on a name clash).
fn install_dir(config: &PluginsConfig) -> anyhow::Result<PathBuf> {
    config.plugin_dirs().into_iter().next().ok_or_else(|| {
        UsageError(
            "no plugin folder to install into: [plugins] default_dir is false and [plugins] dirs is empty (or set XDG_DATA_HOME or HOME)"
                .into(),
        )
        .into()
    })
}

/// Copies `src` to `dest`, readable and writable by the user alone (rkmcp refuses plugin files
/// others can write).
fn copy_private(src: &Path, dest: &Path) -> anyhow::Result<()> {
    std::fs::copy(src, dest)
        .map_err(|e| anyhow::anyhow!("cannot copy {} to {}: {e}", src.display(), dest.display()))?;
    rkmcp_plugin_host::trust::make_private(dest)
        .map_err(|e| anyhow::anyhow!("cannot make {} private: {e}", dest.display()))
}

pub fn install(host: &PluginHost, path: &Path, replace: bool) -> anyhow::Result<()> {
    if !path.is_file() {
        return Err(UsageError(format!("{}: no such file", path.display())).into());
    }
    let name = match (
        path.extension().and_then(|e| e.to_str()),
        path.file_stem().and_then(|s| s.to_str()),
    ) {
        (Some("wasm"), Some(stem)) if !stem.is_empty() && !stem.starts_with('.') => stem,
        _ => {
            return Err(UsageError(format!(
                "{}: a plugin is a NAME.wasm component (its name is the file name without .wasm)",
                path.display()
            ))
            .into());
        }
    };
    let dir = install_dir(host.config())?;
    rkmcp_plugin_host::trust::create_private_dir(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create the plugin folder {}: {e}", dir.display()))?;
    rkmcp_plugin_host::trust::check_folder(&dir)
        .map_err(|e| UsageError(format!("cannot install into {}: {e}", dir.display())))?;
    let dest = dir.join(format!("{name}.wasm"));
    if dest.exists() && !replace {
        return Err(UsageError(format!(
            "a plugin named {} is already installed at {}; pass --replace to overwrite it (or rename the file to install it beside)",
            clean(name),
            dest.display()
        ))
        .into());
    }
    let manifest = path.with_extension("toml");
    let manifest = manifest.is_file().then_some(manifest);

    // Check the copy, not the original: the plugin is judged (and compiled into the cache)
    // exactly as it will load, and a download in a folder others can write (which rkmcp
    // rightly refuses to load from) still installs. The staging folder is private and inside
    // the plugin folder, so the final renames are atomic and a running rkmcp never sees a
    // half-written component (it only reads NAME.wasm files at the top of the folder).
    let stage = tempfile::Builder::new()
        .prefix(".install-")
        .tempdir_in(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create a staging folder in {}: {e}", dir.display()))?;
    let staged = stage.path().join(format!("{name}.wasm"));
    let staged_manifest = stage.path().join(format!("{name}.toml"));
    copy_private(path, &staged)?;
    if let Some(m) = &manifest {
        copy_private(m, &staged_manifest)?;
    }
    let info = host
        .inspect(&staged)
        .map_err(|e| UsageError(format!("{} cannot be installed: {e}", path.display())))?;
    if let PluginStatus::Error(e) = &info.status {
        return Err(UsageError(format!(
            "{} cannot be installed: {}",
            path.display(),
            clean(e)
        ))
        .into());
    }

    let dest_manifest = dir.join(format!("{name}.toml"));
    if manifest.is_some() {
        std::fs::rename(&staged_manifest, &dest_manifest).map_err(|e| {
            anyhow::anyhow!(
                "cannot move the manifest to {}: {e}",
                dest_manifest.display()
            )
        })?;
    } else if dest_manifest.exists() {
        // The old version's manifest would describe a plugin that is no longer there.
        std::fs::remove_file(&dest_manifest).map_err(|e| {
            anyhow::anyhow!("cannot remove the old {}: {e}", dest_manifest.display())
        })?;
    }
    std::fs::rename(&staged, &dest)
        .map_err(|e| anyhow::anyhow!("cannot move the component to {}: {e}", dest.display()))?;
    // The digest of the very bytes that were checked (the staged copy, renamed into place).
    let recorded = match (&info.sha256, host.config().resolved_lock_file()) {
        (Some(sha256), Some(lock_file)) => {
            let approval = PendingApproval {
                name: name.to_string(),
                path: dest.clone(),
                lock_file: lock_file.clone(),
                previous: None,
                sha256: sha256.clone(),
                grants: grant_lines(&host.config().grant(name)),
            };
            host.record_approval(&approval)?;
            Some((short(sha256), lock_file))
        }
        _ => None,
    };

    println!(
        "installed {} ({}, rkmcp:plugin@{}) to {}",
        clean(name),
        info.kind.map_or("-".to_string(), |k| k.to_string()),
        info.contract_version.as_deref().unwrap_or("-"),
        dest.display()
    );
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter().map(|s| clean(s)).collect::<Vec<_>>().join(", ")
        }
    };
    let r = info
        .manifest
        .as_ref()
        .map(|m| m.requests.clone())
        .unwrap_or_default();
    let files: Vec<String> = r
        .files
        .iter()
        .map(|f| format!("{} ({})", f.guest, mode_name(f.mode)))
        .collect();
    if manifest.is_none() {
        println!("requests:  nothing (no {name}.toml manifest beside it)");
    } else {
        println!(
            "requests:  files: {}; network: {}; env: {}",
            list(&files),
            list(&r.network),
            list(&r.env)
        );
    }
    let g = &info.grants;
    if g.grants_nothing() {
        println!("granted:   nothing (no files, no network, no environment)");
    } else {
        let parts: Vec<String> = g
            .capabilities
            .iter()
            .map(|(cap, items)| format!("{cap}: {}", list(items)))
            .collect();
        println!(
            "granted:   {} (from [plugins.grants.{}])",
            parts.join("; "),
            key(name)
        );
    }
    if let Some((sha256, lock_file)) = recorded {
        println!(
            "approved:  sha256 {sha256} recorded in {} (a changed file is not run until `rkmcp plugins approve {}`)",
            lock_file.display(),
            clean(name)
        );
    }
    if let Some(snippet) = grant_snippet(&info) {
        println!(
            "To grant what it requests, add this to your config (or run `rkmcp plugins grant {} …`):\n",
            clean(name)
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
fn file_entry(spec: &str, mode: FileMode) -> anyhow::Result<(PathBuf, String)> {
    let flag = match mode {
        FileMode::Ro => "--read",
        FileMode::Rw => "--write",
    };
    let (host, guest) = match spec.split_once(':') {
        Some((h, g)) => (h, Some(g)),
        None => (spec, None),
    };
    let real = std::fs::canonicalize(host).map_err(|e| {
        UsageError(format!(
            "{flag} {spec}: {host}: {e} (grant an existing folder)"
        ))
    })?;
    if !real.is_dir() {
        return Err(UsageError(format!(
            "{flag} {spec}: {} is not a folder (grants are folders)",
            real.display()
        ))
        .into());
    }
    let guest = guest
        .map(str::to_string)
        .unwrap_or_else(|| real.display().to_string());
    rkmcp_plugin_host::grants::check_guest_path(&guest)
        .map_err(|e| UsageError(format!("{flag} {spec}: {e}")))?;
    Ok((real, guest))
}

/// Appends the values not already there, keeping the array's own formatting.
fn add_strings(
    table: &mut toml_edit::Table,
    key: &str,
    values: &[String],
    where_: &str,
) -> anyhow::Result<()> {
    if values.is_empty() {
        return Ok(());
    }
    let item = table
        .entry(key)
        .or_insert(toml_edit::value(toml_edit::Array::new()));
    let Some(array) = item.as_array_mut() else {
        return Err(UsageError(format!(
            "{where_}: `{key}` is not an array: fix it by hand first"
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

/// A plugin name is a file name and a config key: nothing a terminal or a path would read
/// differently.
fn check_grant_name(name: &str) -> Result<(), UsageError> {
    if name.is_empty()
        || name.starts_with('.')
        || name.ends_with(".wasm")
        || name
            .chars()
            .any(|c| c.is_control() || c == '/' || c == '\\')
    {
        return Err(UsageError(format!(
            "plugin name {:?}: give the plugin's name, its file name without .wasm (as `rkmcp plugins list` shows it)",
            clean(name)
        )));
    }
    Ok(())
}

/// Checks the arguments before anything is read or written, naming the one that is wrong.
fn check_request(req: &GrantRequest) -> anyhow::Result<()> {
    check_grant_name(&req.name)?;
    if req.network.is_empty() && req.read.is_empty() && req.write.is_empty() && req.env.is_empty() {
        return Err(UsageError(
            "nothing to grant: give --network HOST:PORT, --read FOLDER, --write FOLDER or --env VAR"
                .into(),
        )
        .into());
    }
    for n in &req.network {
        rkmcp_plugin_host::grants::NetPattern::parse(n)
            .map_err(|e| UsageError(format!("--network {n}: {e}")))?;
    }
    for v in &req.env {
        if v.is_empty() || v.contains('=') || v.contains('\0') {
            return Err(UsageError(format!(
                "--env {v:?}: give the name of an environment variable (no `=`)"
            ))
            .into());
        }
    }
    Ok(())
}

/// The config file itself when it is a symbolic link (dotfiles kept elsewhere): replacing the
/// link with a file would silently cut it off from the user's copy.
fn real_config_path(config: &Path) -> PathBuf {
    std::fs::canonicalize(config).unwrap_or_else(|_| config.to_path_buf())
}

pub fn grant(config: &Path, req: &GrantRequest) -> anyhow::Result<()> {
    check_request(req)?;
    let config = real_config_path(config);
    let config = config.as_path();
    let (text, mode) = match std::fs::read_to_string(config) {
        Ok(t) => {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(config)
                .map(|m| m.permissions().mode() & 0o7777)
                .ok();
            (t, mode)
        }
        // Not there yet (or its folder is not): written below, or the folder's error named.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            (String::new(), None)
        }
        Err(e) => {
            return Err(anyhow::anyhow!(
                "cannot read {}: {e}; fix its permissions or pass --config FILE",
                config.display()
            ));
        }
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        UsageError(format!(
            "{} is not valid TOML, so it is left alone: {e}",
            config.display()
        ))
    })?;
    let where_ = format!("{}: [plugins.grants.{}]", config.display(), key(&req.name));
    // Tables rkmcp adds on the way are implicit (no `[plugins]` header of their own); the
    // user's own tables keep theirs.
    let table = sub_table(doc.as_table_mut(), "plugins")
        .and_then(|p| sub_table(p, "grants"))
        .and_then(|g| sub_table(g, &req.name))
        .ok_or_else(|| {
            UsageError(format!(
                "{where_} is written in a form rkmcp cannot extend (an inline table?): edit it by hand"
            ))
        })?;
    add_strings(table, "network", &req.network, &where_)?;
    add_strings(table, "env", &req.env, &where_)?;
    let mut new_files = Vec::new();
    for (specs, mode) in [(&req.read, FileMode::Ro), (&req.write, FileMode::Rw)] {
        for spec in specs {
            new_files.push((file_entry(spec, mode)?, mode));
        }
    }
    if !new_files.is_empty() {
        let item = table
            .entry("files")
            .or_insert(toml_edit::value(toml_edit::Array::new()));
        let Some(array) = item.as_array_mut() else {
            return Err(UsageError(format!(
                "{where_}: `files` is not an array of {{ host, guest, mode }}: fix it by hand first"
            ))
            .into());
        };
        for ((host, guest), mode) in &new_files {
            let host = host.display().to_string();
            let same = |v: &toml_edit::Value| {
                let t = v.as_inline_table();
                let get = |k| t.and_then(|t| t.get(k)).and_then(|v| v.as_str());
                get("host") == Some(host.as_str())
                    && get("guest") == Some(guest.as_str())
                    && get("mode").unwrap_or("ro") == mode_name(*mode)
            };
            if !array.iter().any(same) {
                let mut t = toml_edit::InlineTable::new();
                t.insert("host", host.as_str().into());
                t.insert("guest", guest.as_str().into());
                t.insert("mode", mode_name(*mode).into());
                array.push(t);
            }
        }
    }

    // The edited config must still be one rkmcp loads, and the grant one it accepts: check
    // here, where the user can still answer no, instead of at the next start.
    let new_text = doc.to_string();
    let plugins = toml::from_str::<toml::Table>(&new_text)
        .ok()
        .and_then(|t| t.get("plugins").cloned())
        .unwrap_or_else(|| toml::Value::Table(toml::Table::new()));
    let plugins: PluginsConfig = serde::Deserialize::deserialize(plugins).map_err(|e| {
        UsageError(format!(
            "{}: [plugins] would not load: {e}",
            config.display()
        ))
    })?;
    let protected = plugins.protected_dirs();
    for ((host, _), mode) in &new_files {
        let host = rkmcp_plugin_host::trust::normalize(host);
        if let Some(p) =
            rkmcp_plugin_host::trust::grant_conflict(&host, *mode == FileMode::Rw, &protected)
        {
            return Err(UsageError(format!(
                "{} reaches {} ({}): rkmcp refuses that grant",
                host.display(),
                p.path.display(),
                p.what
            ))
            .into());
        }
    }

    let shown = doc
        .get("plugins")
        .and_then(|p| p.get("grants"))
        .and_then(|g| g.get(&req.name))
        .map(|t| t.to_string())
        .unwrap_or_default();
    if new_text == text {
        println!(
            "{where_} already grants all of that; {} is unchanged",
            config.display()
        );
        return Ok(());
    }
    println!(
        "[plugins.grants.{}] in {} will be:\n{}",
        key(&req.name),
        config.display(),
        shown.trim_end()
    );
    if !req.yes {
        if !std::io::stdin().is_terminal() {
            return Err(UsageError(format!(
                "not written: no terminal to confirm at; pass --yes to write the grant into {}",
                config.display()
            ))
            .into());
        }
        eprint!("Write it? [y/N] ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("not written");
            return Ok(());
        }
    }
    write_config(config, &new_text, mode)?;
    println!(
        "written to {}; it applies from the next load of {}",
        config.display(),
        clean(&req.name)
    );
    Ok(())
}

/// Writes beside and renames: an interrupted write never leaves half a config behind. The
/// file keeps its permissions (a config holding secrets is often 0600); a new one is private.
fn write_config(config: &Path, text: &str, mode: Option<u32>) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let parent = config
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| {
        anyhow::anyhow!(
            "cannot create {} for the config: {e}; fix its permissions or pass --config FILE",
            parent.display()
        )
    })?;
    let fail = |e: std::io::Error| {
        anyhow::anyhow!(
            "cannot write {}: {e}; fix its folder's permissions or pass --config FILE",
            config.display()
        )
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".config-")
        .suffix(".part")
        .tempfile_in(parent)
        .map_err(fail)?;
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode.unwrap_or(0o600)))
        .map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(config).map_err(|e| fail(e.error))?;
    Ok(())
}
