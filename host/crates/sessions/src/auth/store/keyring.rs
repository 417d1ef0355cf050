//! The OS keyring backend: one Secret Service item per sign-in, in the default collection
//! (GNOME Keyring, KWallet, KeePassXC all serve it on a desktop's session bus). Items are found
//! by attributes that are the store's key (issuer, resource, client), so `replace` on create
//! swaps exactly the entry being saved; the secret is the whole entry as JSON.
//!
//! Why `secret-service` and not the `keyring` crate: rkmcp is async, and needs more than
//! get/set of one password: listing every sign-in for `auth status`, and telling "no keyring
//! here" (use the file) apart from "the keyring failed" (say so). `secret-service` is the crate
//! `keyring` itself uses on Linux, speaks D-Bus through zbus (pure Rust, no libdbus) on tokio,
//! and encrypts the secrets in transit with RustCrypto.
use std::collections::HashMap;
use std::time::Duration;

use secret_service::{Collection, EncryptionType, SecretService};

use super::{Entry, StoreError};

/// How long a keyring call may take before rkmcp stops waiting (a hung daemon must not hang
/// every command).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a person has to answer the desktop's unlock prompt.
const UNLOCK_TIMEOUT: Duration = Duration::from_secs(120);

const APPLICATION: &str = "rkmcp";
const KIND: &str = "oauth-sign-in";

pub struct KeyringStore {
    service: SecretService<'static>,
    /// The collection's label, for `auth status` and errors.
    label: String,
}

impl std::fmt::Debug for KeyringStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyringStore")
            .field("label", &self.label)
            .finish()
    }
}

/// Why the keyring could not be opened: none there at all, or one that failed.
pub enum OpenError {
    /// No Secret Service on a session bus (a headless board, an SSH session).
    Absent(String),
    Failed(StoreError),
}

fn reason(err: secret_service::Error) -> String {
    use secret_service::Error as E;
    match err {
        E::Locked => "the collection is locked".into(),
        E::Prompt => "the unlock prompt was dismissed".into(),
        E::NoResult => "the keyring returned no result".into(),
        E::Unavailable => "no Secret Service is running on the session bus".into(),
        E::Crypto(what) => format!("the secret could not be decrypted ({what})"),
        E::Zbus(e) => e.to_string(),
        E::ZbusFdo(e) => e.to_string(),
        E::Zvariant(e) => e.to_string(),
        _ => "an unknown keyring error".into(),
    }
}

fn failed(what: &'static str) -> impl FnOnce(secret_service::Error) -> StoreError {
    move |err| StoreError::Keyring {
        what,
        reason: reason(err),
    }
}

async fn within<T>(
    limit: Duration,
    what: &'static str,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
        Err(StoreError::Keyring {
            what,
            reason: format!("no answer within {} s", limit.as_secs()),
        })
    })
}

fn attributes(entry: &Entry) -> HashMap<&str, &str> {
    HashMap::from([
        ("application", APPLICATION),
        ("kind", KIND),
        ("resource", entry.resource.as_str()),
        ("issuer", entry.issuer().unwrap_or("")),
        ("client_id", entry.client_id()),
    ])
}

fn search_attributes() -> HashMap<&'static str, &'static str> {
    HashMap::from([("application", APPLICATION), ("kind", KIND)])
}

impl KeyringStore {
    /// Connects to the session bus's Secret Service and unlocks its default collection (the
    /// desktop may prompt the person).
    pub async fn open() -> Result<KeyringStore, OpenError> {
        let service =
            match tokio::time::timeout(CALL_TIMEOUT, SecretService::connect(EncryptionType::Dh))
                .await
            {
                Ok(Ok(service)) => service,
                Ok(Err(err)) => return Err(OpenError::Absent(reason(err))),
                Err(_) => {
                    return Err(OpenError::Absent(format!(
                        "the session bus did not answer within {} s",
                        CALL_TIMEOUT.as_secs()
                    )));
                }
            };
        let mut store = KeyringStore {
            service,
            label: String::new(),
        };
        let (label, locked) = within(CALL_TIMEOUT, "open its default collection", async {
            let collection = store.collection().await?;
            let label = collection
                .get_label()
                .await
                .map_err(failed("read a label"))?;
            let locked = collection
                .is_locked()
                .await
                .map_err(failed("check a lock"))?;
            Ok((label, locked))
        })
        .await
        .map_err(OpenError::Failed)?;
        store.label = label;
        if locked {
            tracing::info!("unlocking the keyring `{}`", store.label);
            within(UNLOCK_TIMEOUT, "unlock its default collection", async {
                let collection = store.collection().await?;
                collection
                    .unlock()
                    .await
                    .map_err(failed("unlock its default collection"))
            })
            .await
            .map_err(OpenError::Failed)?;
        }
        Ok(store)
    }

    /// "the OS keyring (collection `Login`)".
    pub fn describe(&self) -> String {
        format!("the OS keyring (collection `{}`)", self.label)
    }

    /// The default collection, or any collection where no default is set.
    async fn collection(&self) -> Result<Collection<'_>, StoreError> {
        match self.service.get_default_collection().await {
            Ok(c) => Ok(c),
            Err(secret_service::Error::NoResult) => self
                .service
                .get_any_collection()
                .await
                .map_err(failed("find a collection")),
            Err(e) => Err(failed("open its default collection")(e)),
        }
    }

    /// Every sign-in, each with its secret as stored (JSON). An item that does not parse is
    /// left alone and reported, so one damaged item never hides the others.
    async fn items(&self) -> Result<Vec<(Entry, String)>, StoreError> {
        within(CALL_TIMEOUT, "read the sign-ins", async {
            let collection = self.collection().await?;
            let items = collection
                .search_items(search_attributes())
                .await
                .map_err(failed("search its items"))?;
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let secret = item.get_secret().await.map_err(failed("read an item"))?;
                let text = String::from_utf8_lossy(&secret).into_owned();
                match serde_json::from_str::<Entry>(&text) {
                    Ok(entry) => out.push((entry, text)),
                    Err(e) => {
                        let label = item.get_label().await.unwrap_or_default();
                        tracing::warn!(
                            target: rkmcp_term_safe::NOTICE_TARGET,
                            "keyring item `{label}` is not an rkmcp sign-in ({e}); left as it is"
                        );
                    }
                }
            }
            Ok(out)
        })
        .await
    }

    pub async fn entries(&self) -> Result<Vec<Entry>, StoreError> {
        Ok(self.items().await?.into_iter().map(|(e, _)| e).collect())
    }

    /// Applies `f` to the entries and writes back only what changed.
    pub async fn update(&self, f: impl FnOnce(&mut Vec<Entry>)) -> Result<(), StoreError> {
        let before = self.items().await?;
        let mut after: Vec<Entry> = before.iter().map(|(e, _)| e.clone()).collect();
        f(&mut after);
        let plan = plan(&before, after)?;
        within(CALL_TIMEOUT, "save the sign-ins", async {
            let collection = self.collection().await?;
            for gone in &plan.delete {
                for item in collection
                    .search_items(attributes(gone))
                    .await
                    .map_err(failed("search its items"))?
                {
                    item.delete().await.map_err(failed("delete an item"))?;
                }
            }
            for (entry, json) in &plan.write {
                collection
                    .create_item(
                        &format!("rkmcp sign-in: {} ({})", entry.server, entry.resource),
                        attributes(entry),
                        json.as_bytes(),
                        true,
                        "application/json",
                    )
                    .await
                    .map_err(failed("save an item"))?;
            }
            Ok(())
        })
        .await
    }
}

/// What an update changes in the keyring.
#[derive(Debug, Default)]
pub struct Plan {
    /// Keys that are no longer there.
    pub delete: Vec<Entry>,
    /// Entries that are new or changed, with their JSON.
    pub write: Vec<(Entry, String)>,
}

/// Compares the entries before and after an update by key and content.
pub fn plan(before: &[(Entry, String)], after: Vec<Entry>) -> Result<Plan, StoreError> {
    let mut plan = Plan::default();
    for (old, _) in before {
        if !after.iter().any(|e| e.same_key(old)) {
            plan.delete.push(old.clone());
        }
    }
    for entry in after {
        let json = serde_json::to_string(&entry).map_err(|e| StoreError::Keyring {
            what: "save an item",
            reason: e.to_string(),
        })?;
        let unchanged = before
            .iter()
            .any(|(old, old_json)| old.same_key(&entry) && *old_json == json);
        if !unchanged {
            plan.write.push((entry, json));
        }
    }
    Ok(plan)
}
