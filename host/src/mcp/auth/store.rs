//! The token store: one JSON file, `$XDG_STATE_HOME/rkmcp/auth/credentials.json`, mode 0600 in a
//! 0700 directory. Entries are keyed by issuer, resource and client, so a token is only ever
//! offered to the resource it was issued for, by the authorization server that issued it.
//!
//! Why a file and not the OS keyring: on a headless board (the main target) there is no Secret
//! Service to talk to, and the `keyring` crate's Linux backends need D-Bus (a C library or a large
//! async stack) for a session that is not there. The file is refused, with the fix, when other
//! users could read it. Writes go to a temporary file in the same directory and are renamed into
//! place, so a crash never leaves half a file.
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};

/// One signed-in (issuer, resource, client).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The config name the sign-in was made under (for `auth status`; the key is the resource).
    pub server: String,
    /// The MCP server URL the tokens are for (RFC 8707 resource).
    pub resource: String,
    /// rmcp's record: client id, token response, granted scopes, when received, issuer.
    pub credentials: StoredCredentials,
    /// Seconds since the epoch when this entry was written.
    #[serde(default)]
    pub saved_at: u64,
    /// The DPoP proof key (PKCS#8 PEM) the tokens are bound to, when the authorization server
    /// issued DPoP tokens: a refresh and every request must prove this same key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<String>,
}

impl Entry {
    pub fn issuer(&self) -> Option<&str> {
        self.credentials.issuer.as_deref()
    }

    pub fn client_id(&self) -> &str {
        &self.credentials.client_id
    }

    fn same_key(&self, other: &Entry) -> bool {
        self.resource == other.resource
            && self.issuer() == other.issuer()
            && self.client_id() == other.client_id()
    }
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct StoreFile {
    version: u32,
    entries: Vec<Entry>,
}

/// Why the store could not be used. Never contains a token.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{} is readable by other users (mode {mode:o}); fix it with `chmod {want:o} {}`", path.display(), path.display())]
    TooOpen { path: PathBuf, mode: u32, want: u32 },
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a valid token store ({source}); move it away and sign in again", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("no state directory: set $XDG_STATE_HOME or $HOME")]
    NoStateDir,
}

/// The credentials file.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

/// Serialises writers in this process; the rename makes each write atomic for other processes.
static WRITE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl TokenStore {
    /// The store under `$XDG_STATE_HOME/rkmcp/auth` (`~/.local/state/rkmcp/auth`).
    pub fn open_default() -> Result<TokenStore, StoreError> {
        let dir = dirs::state_dir()
            .ok_or(StoreError::NoStateDir)?
            .join("rkmcp")
            .join("auth");
        Ok(TokenStore { dir })
    }

    pub fn at(dir: impl Into<PathBuf>) -> TokenStore {
        TokenStore { dir: dir.into() }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("credentials.json")
    }

    /// Every entry. A missing file is an empty store; a file others can read is refused.
    pub fn entries(&self) -> Result<Vec<Entry>, StoreError> {
        let path = self.path();
        if !self.dir.exists() {
            return Ok(Vec::new());
        }
        check_private(&self.dir, 0o700)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Io {
                    what: "read",
                    path,
                    source,
                });
            }
        };
        check_private(&path, 0o600)?;
        let file: StoreFile =
            serde_json::from_str(&text).map_err(|source| StoreError::Corrupt { path, source })?;
        Ok(file.entries)
    }

    /// Rewrites the file with `f` applied to the entries.
    pub async fn update(&self, f: impl FnOnce(&mut Vec<Entry>)) -> Result<(), StoreError> {
        let _guard = WRITE_LOCK.lock().await;
        let mut entries = self.entries()?;
        f(&mut entries);
        self.write(entries)
    }

    fn write(&self, entries: Vec<Entry>) -> Result<(), StoreError> {
        let io = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { what, path, source }
        };
        if !self.dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(io("create", &self.dir))?;
            // `mode` only applies to the last component, and umask may have narrowed it further.
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                .map_err(io("protect", &self.dir))?;
        }
        check_private(&self.dir, 0o700)?;
        let text = serde_json::to_vec_pretty(&StoreFile {
            version: 1,
            entries,
        })
        .map_err(|source| StoreError::Corrupt {
            path: self.path(),
            source,
        })?;
        let mut tmp = tempfile::Builder::new()
            .prefix(".credentials")
            .permissions(std::fs::Permissions::from_mode(0o600))
            .tempfile_in(&self.dir)
            .map_err(io("create a file in", &self.dir))?;
        tmp.write_all(&text)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(io("write", tmp.path()))?;
        tmp.persist(self.path()).map_err(|e| StoreError::Io {
            what: "replace",
            path: self.path(),
            source: e.error,
        })?;
        Ok(())
    }
}

/// Refuses a path whose group/other bits are set (`want` is the mode to suggest).
fn check_private(path: &Path, want: u32) -> Result<(), StoreError> {
    let meta = std::fs::metadata(path).map_err(|source| StoreError::Io {
        what: "inspect",
        path: path.to_path_buf(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(StoreError::TooOpen {
            path: path.to_path_buf(),
            mode,
            want,
        });
    }
    Ok(())
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// rmcp's view of the store for one server: the entries for its resource (and its configured
/// client, when one is pre-registered).
#[derive(Clone)]
pub struct ServerStore {
    pub store: TokenStore,
    pub server: String,
    pub resource: String,
    pub client_id: Option<String>,
    /// Serialises refreshes of this server's tokens inside the process.
    refresh: Arc<tokio::sync::Mutex<()>>,
    /// The DPoP key written with every save (see [`Entry::dpop_key`]).
    dpop_key: Option<String>,
}

impl ServerStore {
    pub fn new(
        store: TokenStore,
        server: &str,
        resource: &str,
        client_id: Option<String>,
    ) -> ServerStore {
        ServerStore {
            store,
            server: server.to_string(),
            resource: resource.to_string(),
            client_id,
            refresh: Arc::default(),
            dpop_key: None,
        }
    }

    /// The same store, saving `pem` as the DPoP key of what it writes.
    pub fn with_dpop_key(mut self, pem: &str) -> ServerStore {
        self.dpop_key = Some(pem.to_string());
        self
    }

    fn matches(&self, entry: &Entry) -> bool {
        entry.resource == self.resource
            && self
                .client_id
                .as_deref()
                .is_none_or(|id| id == entry.client_id())
    }

    /// The newest matching entry.
    pub fn entry(&self) -> Result<Option<Entry>, StoreError> {
        Ok(self
            .store
            .entries()?
            .into_iter()
            .filter(|e| self.matches(e))
            .max_by_key(|e| e.saved_at))
    }

    /// Removes every entry for this server's resource; returns what was removed.
    pub async fn remove_all(&self) -> Result<Vec<Entry>, StoreError> {
        let mut removed = Vec::new();
        self.store
            .update(|entries| {
                let (gone, kept): (Vec<_>, Vec<_>) =
                    entries.drain(..).partition(|e| self.matches(e));
                removed = gone;
                *entries = kept;
            })
            .await?;
        Ok(removed)
    }
}

fn store_error(err: StoreError) -> AuthError {
    AuthError::CredentialStoreError(err.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.entry().map_err(store_error)?.map(|e| e.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let entry = Entry {
            server: self.server.clone(),
            resource: self.resource.clone(),
            credentials,
            saved_at: now_secs(),
            dpop_key: self.dpop_key.clone(),
        };
        self.store
            .update(|entries| {
                entries.retain(|e| !e.same_key(&entry));
                entries.push(entry);
            })
            .await
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove_all().await.map(|_| ()).map_err(store_error)
    }

    async fn acquire_refresh_guard(
        &self,
    ) -> Result<Option<rmcp::transport::auth::CredentialRefreshGuard>, AuthError> {
        let guard = self.refresh.clone().lock_owned().await;
        Ok(Some(rmcp::transport::auth::CredentialRefreshGuard::new(
            guard,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(client: &str, issuer: &str) -> StoredCredentials {
        StoredCredentials::new(client.into(), None, vec!["mcp".into()], Some(1))
            .with_issuer(Some(issuer.into()))
    }

    #[tokio::test]
    async fn entries_are_keyed_by_issuer_resource_and_client() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let a = ServerStore::new(store.clone(), "a", "http://h/mcp", None);
        let b = ServerStore::new(store.clone(), "b", "http://other/mcp", None);
        a.save(creds("c1", "http://as1")).await.unwrap();
        a.save(creds("c1", "http://as1")).await.unwrap(); // same key: replaced
        a.save(creds("c2", "http://as2")).await.unwrap();
        b.save(creds("c1", "http://as1")).await.unwrap();
        assert_eq!(store.entries().unwrap().len(), 3);
        // Another resource never sees a's tokens.
        assert_eq!(b.load().await.unwrap().unwrap().client_id, "c1");
        // A pre-registered client only sees its own entry.
        let a_c1 = ServerStore::new(store.clone(), "a", "http://h/mcp", Some("c1".into()));
        assert_eq!(
            a_c1.load().await.unwrap().unwrap().issuer.as_deref(),
            Some("http://as1")
        );
        a.clear().await.unwrap();
        assert_eq!(store.entries().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_dpop_key_is_kept_with_its_tokens_across_saves() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let plain = ServerStore::new(store.clone(), "a", "http://h/mcp", None);
        plain.save(creds("c1", "http://as1")).await.unwrap();
        assert_eq!(plain.entry().unwrap().unwrap().dpop_key, None);
        // A refresh saves through a store that knows the key, so the entry keeps it.
        let bound = plain.clone().with_dpop_key("PEM");
        bound.save(creds("c1", "http://as1")).await.unwrap();
        assert_eq!(store.entries().unwrap().len(), 1);
        assert_eq!(
            plain.entry().unwrap().unwrap().dpop_key.as_deref(),
            Some("PEM")
        );
    }

    #[tokio::test]
    async fn file_is_private_and_an_open_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let s = ServerStore::new(store.clone(), "a", "http://h/mcp", None);
        s.save(creds("c1", "http://as1")).await.unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&store.path()), 0o600);
        assert_eq!(mode(tmp.path().join("auth").as_path()), 0o700);

        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = store.entries().unwrap_err().to_string();
        assert!(err.contains("readable by other users"), "{err}");
        assert!(
            err.contains(&format!("chmod 600 {}", store.path().display())),
            "{err}"
        );
        // Refused for writing too, and the file is left as it was.
        assert!(s.save(creds("c2", "http://as1")).await.is_err());

        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(
            tmp.path().join("auth"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let err = store.entries().unwrap_err().to_string();
        assert!(err.contains("chmod 700"), "{err}");
    }
}
