//! The token store: where sign-ins live, keyed by issuer, resource and client, so a token is
//! only ever offered to the resource it was issued for, by the authorization server that issued
//! it.
//!
//! Two backends ([`RKMCP_TOKEN_STORE`](STORE_ENV) picks; `auto` is the default):
//! - the OS keyring (Secret Service on the session bus, [`keyring`]) where one answers: a
//!   desktop, or a board with a keyring daemon;
//! - else a file, `$XDG_STATE_HOME/rkmcp/auth/credentials.json`, mode 0600 in a 0700 directory
//!   ([`file`]): a headless board has no session bus to ask.
//!
//! Sign-ins made in the file before a keyring was there are moved into it the first time the
//! keyring is used, so one machine never has two stores that disagree.
use std::path::PathBuf;
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

    pub(crate) fn same_key(&self, other: &Entry) -> bool {
        self.resource == other.resource
            && self.issuer() == other.issuer()
            && self.client_id() == other.client_id()
    }
}

mod file;
pub mod keyring;

use file::FileStore;
use keyring::KeyringStore;

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
    #[error(
        "the OS keyring could not {what}: {reason}; to keep tokens in a file instead, set {STORE_ENV}=file"
    )]
    Keyring { what: &'static str, reason: String },
    #[error(
        "{STORE_ENV}=keyring, but there is no OS keyring: {0}; start one (e.g. gnome-keyring-daemon) or set {STORE_ENV}=auto"
    )]
    NoKeyring(String),
    #[error("{STORE_ENV}={0:?} is not a token store; use auto, keyring or file")]
    BadChoice(String),
}

/// The environment variable that picks the backend: `auto`, `keyring` or `file`.
pub const STORE_ENV: &str = "RKMCP_TOKEN_STORE";

/// Which backend the person asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreChoice {
    /// The keyring where one answers, else the file.
    Auto,
    Keyring,
    File,
}

impl StoreChoice {
    /// Reads [`STORE_ENV`]'s value (unset or empty: `auto`).
    pub fn parse(value: Option<&str>) -> Result<StoreChoice, StoreError> {
        match value.map(str::trim).unwrap_or("") {
            "" | "auto" => Ok(StoreChoice::Auto),
            "keyring" => Ok(StoreChoice::Keyring),
            "file" => Ok(StoreChoice::File),
            other => Err(StoreError::BadChoice(other.to_string())),
        }
    }
}

/// The token store: the OS keyring or the credentials file.
#[derive(Debug, Clone)]
pub struct TokenStore {
    backend: Backend,
}

#[derive(Debug, Clone)]
enum Backend {
    File(FileStore),
    Keyring(Arc<KeyringStore>),
}

/// Serialises writers in this process; each backend makes its writes atomic for other processes.
static WRITE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

impl TokenStore {
    /// The store [`STORE_ENV`] asks for: by default the OS keyring where one answers, else the
    /// file under `$XDG_STATE_HOME/rkmcp/auth` (`~/.local/state/rkmcp/auth`).
    pub async fn open_default() -> Result<TokenStore, StoreError> {
        let choice = StoreChoice::parse(std::env::var(STORE_ENV).ok().as_deref())?;
        let file = FileStore::at(
            dirs::state_dir()
                .ok_or(StoreError::NoStateDir)?
                .join("rkmcp")
                .join("auth"),
        );
        let keyring = match choice {
            StoreChoice::File => return Ok(TokenStore::file(file)),
            StoreChoice::Auto | StoreChoice::Keyring => KeyringStore::open().await,
        };
        match keyring {
            Ok(keyring) => {
                let store = TokenStore {
                    backend: Backend::Keyring(Arc::new(keyring)),
                };
                store.take_over(&file).await?;
                Ok(store)
            }
            Err(keyring::OpenError::Absent(reason)) if choice == StoreChoice::Auto => {
                tracing::debug!("no OS keyring ({reason}); tokens are kept in a file");
                Ok(TokenStore::file(file))
            }
            Err(keyring::OpenError::Absent(reason)) => Err(StoreError::NoKeyring(reason)),
            Err(keyring::OpenError::Failed(err)) => Err(err),
        }
    }

    /// The file store in `dir`.
    pub fn at(dir: impl Into<PathBuf>) -> TokenStore {
        TokenStore::file(FileStore::at(dir))
    }

    fn file(file: FileStore) -> TokenStore {
        TokenStore {
            backend: Backend::File(file),
        }
    }

    /// Where the tokens are: "the file PATH" or "the OS keyring (collection `Login`)".
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::File(f) => format!("the file {}", f.path().display()),
            Backend::Keyring(k) => k.describe(),
        }
    }

    /// Every entry. An empty store has none; a file others can read is refused.
    pub async fn entries(&self) -> Result<Vec<Entry>, StoreError> {
        match &self.backend {
            Backend::File(f) => f.entries(),
            Backend::Keyring(k) => k.entries().await,
        }
    }

    /// Rewrites the store with `f` applied to the entries.
    pub async fn update(&self, f: impl FnOnce(&mut Vec<Entry>)) -> Result<(), StoreError> {
        let _guard = WRITE_LOCK.lock().await;
        match &self.backend {
            Backend::File(file) => {
                let mut entries = file.entries()?;
                f(&mut entries);
                file.write(entries)
            }
            Backend::Keyring(k) => k.update(f).await,
        }
    }

    /// Moves the sign-ins of a credentials file into this (keyring) store, newest winning, and
    /// deletes the file once they are safely there.
    async fn take_over(&self, file: &FileStore) -> Result<(), StoreError> {
        let moved = match file.entries() {
            Ok(entries) if entries.is_empty() => return Ok(()),
            Ok(entries) => entries,
            Err(err) => {
                // An unreadable file is left for the person to look at; the keyring still works.
                tracing::warn!(
                    target: rkmcp_term_safe::NOTICE_TARGET,
                    "sign-ins in the old token file were not moved to the keyring: {err}"
                );
                return Ok(());
            }
        };
        let count = moved.len();
        self.update(|entries| {
            for entry in moved {
                match entries.iter_mut().find(|e| e.same_key(&entry)) {
                    Some(kept) if kept.saved_at >= entry.saved_at => {}
                    Some(kept) => *kept = entry,
                    None => entries.push(entry),
                }
            }
        })
        .await?;
        file.remove()?;
        tracing::info!(
            target: rkmcp_term_safe::NOTICE_TARGET,
            "moved {count} sign-in(s) from {} into {}",
            file.path().display(),
            self.describe()
        );
        Ok(())
    }
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
    pub async fn entry(&self) -> Result<Option<Entry>, StoreError> {
        Ok(self
            .store
            .entries()
            .await?
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
        Ok(self
            .entry()
            .await
            .map_err(store_error)?
            .map(|e| e.credentials))
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
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

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
        assert_eq!(store.entries().await.unwrap().len(), 3);
        // Another resource never sees a's tokens.
        assert_eq!(b.load().await.unwrap().unwrap().client_id, "c1");
        // A pre-registered client only sees its own entry.
        let a_c1 = ServerStore::new(store.clone(), "a", "http://h/mcp", Some("c1".into()));
        assert_eq!(
            a_c1.load().await.unwrap().unwrap().issuer.as_deref(),
            Some("http://as1")
        );
        a.clear().await.unwrap();
        assert_eq!(store.entries().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_dpop_key_is_kept_with_its_tokens_across_saves() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let plain = ServerStore::new(store.clone(), "a", "http://h/mcp", None);
        plain.save(creds("c1", "http://as1")).await.unwrap();
        assert_eq!(plain.entry().await.unwrap().unwrap().dpop_key, None);
        // A refresh saves through a store that knows the key, so the entry keeps it.
        let bound = plain.clone().with_dpop_key("PEM");
        bound.save(creds("c1", "http://as1")).await.unwrap();
        assert_eq!(store.entries().await.unwrap().len(), 1);
        assert_eq!(
            plain.entry().await.unwrap().unwrap().dpop_key.as_deref(),
            Some("PEM")
        );
    }

    #[tokio::test]
    async fn file_is_private_and_an_open_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = TokenStore::at(tmp.path().join("auth"));
        let s = ServerStore::new(store.clone(), "a", "http://h/mcp", None);
        s.save(creds("c1", "http://as1")).await.unwrap();
        let path = tmp.path().join("auth/credentials.json");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(tmp.path().join("auth").as_path()), 0o700);

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = store.entries().await.unwrap_err().to_string();
        assert!(err.contains("readable by other users"), "{err}");
        assert!(
            err.contains(&format!("chmod 600 {}", path.display())),
            "{err}"
        );
        // Refused for writing too, and the file is left as it was.
        assert!(s.save(creds("c2", "http://as1")).await.is_err());

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(
            tmp.path().join("auth"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let err = store.entries().await.unwrap_err().to_string();
        assert!(err.contains("chmod 700"), "{err}");
    }

    #[test]
    fn the_backend_is_chosen_by_name_and_a_wrong_name_says_the_choices() {
        assert_eq!(StoreChoice::parse(None).unwrap(), StoreChoice::Auto);
        assert_eq!(StoreChoice::parse(Some("")).unwrap(), StoreChoice::Auto);
        assert_eq!(
            StoreChoice::parse(Some("keyring")).unwrap(),
            StoreChoice::Keyring
        );
        assert_eq!(
            StoreChoice::parse(Some(" file ")).unwrap(),
            StoreChoice::File
        );
        let err = StoreChoice::parse(Some("vault")).unwrap_err().to_string();
        assert!(
            err.contains("RKMCP_TOKEN_STORE=\"vault\"") && err.contains("auto, keyring or file"),
            "{err}"
        );
    }

    fn entry(server: &str, client: &str, saved_at: u64) -> Entry {
        Entry {
            server: server.into(),
            resource: format!("http://{server}/mcp"),
            credentials: creds(client, "http://as1"),
            saved_at,
            dpop_key: None,
        }
    }

    fn stored(entries: &[Entry]) -> Vec<(Entry, String)> {
        entries
            .iter()
            .map(|e| (e.clone(), serde_json::to_string(e).unwrap()))
            .collect()
    }

    #[test]
    fn a_keyring_update_writes_only_what_changed_and_deletes_what_is_gone() {
        let before = stored(&[
            entry("a", "c1", 1),
            entry("b", "c1", 1),
            entry("c", "c1", 1),
        ]);
        // a unchanged, b refreshed, c removed, d new.
        let after = vec![
            entry("a", "c1", 1),
            entry("b", "c1", 2),
            entry("d", "c1", 1),
        ];
        let plan = keyring::plan(&before, after).unwrap();
        let written: Vec<&str> = plan.write.iter().map(|(e, _)| e.server.as_str()).collect();
        let deleted: Vec<&str> = plan.delete.iter().map(|e| e.server.as_str()).collect();
        assert_eq!(written, ["b", "d"]);
        assert_eq!(deleted, ["c"]);
        // The same resource with another client is another key: both are kept.
        let plan = keyring::plan(&before, vec![entry("a", "c1", 1), entry("a", "c2", 1)]).unwrap();
        let written: Vec<&str> = plan.write.iter().map(|(e, _)| e.client_id()).collect();
        assert_eq!(written, ["c2"]);
        assert_eq!(plan.delete.len(), 2);
    }
}
