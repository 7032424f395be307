//! The vault: named secrets, encrypted at rest (XChaCha20-Poly1305), write-only through every
//! interface. Names and descriptions are visible; a value is resolved only inside the tool that
//! uses it, and every value is scrubbed from everything else by the [`Redactor`].

use crate::redact::Redactor;
use arc_swap::ArcSwap;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use skillbase_format::Bundle;
use skillbase_store::{Author, ContentGuard, Store, VaultRow};
use std::path::Path;
use std::sync::Arc;

/// Shortest value accepted: shorter ones would redact innocent text everywhere.
pub const MIN_VALUE_CHARS: usize = 6;
/// Largest value accepted, in bytes (64 KiB); the minimum above is in characters.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Longest entry description, in characters (one line: agents see it).
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// Whether an entry description is one the vault stores: at most `MAX_DESCRIPTION_CHARS`
/// characters, no control characters (so one line).
pub fn description_ok(description: &str) -> bool {
    description.chars().count() <= MAX_DESCRIPTION_CHARS
        && !description.chars().any(char::is_control)
}

/// Why a vault operation failed. Messages name entries, never values.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// The key could not be read, parsed or created (the text says where: the variable or
    /// the key file), or encryption itself failed; nothing was changed.
    #[error("vault key: {0}")]
    Key(String),
    /// The key does not decrypt the stored entry named here: the vault cannot open with this
    /// key. Restore the key the entries were written with.
    #[error(
        "the vault key does not decrypt entry '{0}'; SKILLBASE_VAULT_KEY or the key file changed since it was written"
    )]
    WrongKey(String),
    /// The entry name (as given, cut to 130 characters) fails the format crate's vault-name
    /// grammar, the one grants and skills' `capabilities.vault` use.
    #[error("invalid vault entry name '{0}': use letters, digits, `_`, `-` and `.` (at most 128)")]
    BadName(String),
    /// The value for the entry named here is not UTF-8, has fewer than `MIN_VALUE_CHARS`
    /// characters, or is over `MAX_VALUE_BYTES` bytes; nothing was stored.
    #[error(
        "the value of '{0}' must be UTF-8 text of at least {MIN_VALUE_CHARS} characters and at most {MAX_VALUE_BYTES} bytes"
    )]
    BadValue(String),
    /// The description of the entry named here is over `MAX_DESCRIPTION_CHARS` characters
    /// or holds control characters; nothing was stored.
    #[error(
        "the description of '{0}' must be at most {MAX_DESCRIPTION_CHARS} characters on one line, without control characters"
    )]
    BadDescription(String),
    /// No entry of this name to remove.
    #[error("no vault entry '{0}'")]
    NotFound(String),
    /// The store failed reading or writing vault rows, or rebuilding its index afterwards.
    #[error(transparent)]
    Store(#[from] skillbase_store::StoreError),
}

/// The 256-bit key that encrypts vault values.
pub struct VaultKey([u8; 32]);

impl VaultKey {
    /// From `SKILLBASE_VAULT_KEY` (64 hex digits or base64 of 32 bytes), else from
    /// `<home>/vault.key`, created with owner-only permissions when missing.
    pub fn load(home: &Path) -> Result<VaultKey, VaultError> {
        if let Ok(v) = std::env::var("SKILLBASE_VAULT_KEY") {
            return VaultKey::parse(v.trim())
                .map_err(|e| VaultError::Key(format!("SKILLBASE_VAULT_KEY: {e}")));
        }
        let path = home.join("vault.key");
        match std::fs::read_to_string(&path) {
            Ok(text) => VaultKey::parse(text.trim())
                .map_err(|e| VaultError::Key(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut key = [0u8; 32];
                getrandom::fill(&mut key).map_err(|e| VaultError::Key(e.to_string()))?;
                std::fs::create_dir_all(home)
                    .map_err(|e| VaultError::Key(format!("{}: {e}", home.display())))?;
                write_owner_only(&path, &hex(&key))
                    .map_err(|e| VaultError::Key(format!("{}: {e}", path.display())))?;
                Ok(VaultKey(key))
            }
            Err(e) => Err(VaultError::Key(format!("{}: {e}", path.display()))),
        }
    }

    /// 64 hex digits, or base64 of 32 bytes.
    pub fn parse(s: &str) -> Result<VaultKey, String> {
        use base64::Engine as _;
        let bytes = if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0))
                .collect::<Vec<u8>>()
        } else {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|_| "expected 64 hex digits or base64 of 32 bytes".to_owned())?
        };
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|_| "expected a 32-byte key (64 hex digits)".to_owned())?;
        Ok(VaultKey(key))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(unix)]
fn write_owner_only(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(not(unix))]
fn write_owner_only(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

/// A secret value. It has no `Debug` or `Display` that shows the value.
pub struct Secret(Vec<u8>);

impl Secret {
    /// The bytes, for the tool that uses them.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        // A wipe the compiler cannot optimise away.
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// What anyone may see of an entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VaultEntryInfo {
    /// The entry's name, as grants and skills' `capabilities.vault` name it.
    pub name: String,
    /// What the secret is for, as set with it (free text, shown to anyone who lists).
    pub description: String,
    /// When the value was last set, in Unix milliseconds (the store's clock).
    pub updated_at: i64,
}

/// The store's [`ContentGuard`]: refuse content that holds a vault value, scrub stored content
/// that came to hold one (a value set after the revision was written).
struct Guard(Arc<ArcSwap<Redactor>>);

impl ContentGuard for Guard {
    fn check(&self, bundle: &Bundle, message: &str) -> Result<(), String> {
        let r = self.0.load();
        if let Some(entry) = r.find(message.as_bytes()) {
            return Err(format!(
                "the revision message contains the value of vault entry '{entry}'; describe the change without the secret"
            ));
        }
        for f in bundle.files() {
            if let Some(entry) = r.find(&f.bytes) {
                return Err(format!(
                    "{} contains the value of vault entry '{entry}'; reference the entry by name instead of pasting its value",
                    f.path
                ));
            }
        }
        Ok(())
    }

    fn scrub(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        self.0.load().redact_bytes(bytes)
    }
}

/// The vault over a store.
pub struct Vault {
    store: Arc<Store>,
    cipher: XChaCha20Poly1305,
    values: ArcSwap<Vec<(String, Arc<Secret>)>>,
    info: ArcSwap<Vec<VaultEntryInfo>>,
    redactor: Arc<ArcSwap<Redactor>>,
}

/// The format crate's grammar for vault entry names (one for validation, grants and the vault).
fn valid_name(n: &str) -> bool {
    skillbase_format::validate::check_vault_name(n).is_none()
}

impl Vault {
    /// Open the vault: decrypt every entry, build the redactor, and make the store refuse any
    /// skill whose files contain a vault value.
    pub async fn open(store: Arc<Store>, key: VaultKey) -> Result<Arc<Vault>, VaultError> {
        let cipher = XChaCha20Poly1305::new_from_slice(&key.0)
            .map_err(|_| VaultError::Key("bad key length".into()))?;
        let vault = Arc::new(Vault {
            store: store.clone(),
            cipher,
            values: ArcSwap::from_pointee(Vec::new()),
            info: ArcSwap::from_pointee(Vec::new()),
            redactor: Arc::new(ArcSwap::from_pointee(Redactor::default())),
        });
        vault.load_values().await?;
        store.set_content_guard(Arc::new(Guard(vault.redactor.clone())));
        // Content stored before this process knew a value is scrubbed from the index too.
        if !vault.redactor().is_empty() {
            store.reload().await?;
        }
        Ok(vault)
    }

    /// Re-read every entry from the store (after this or another process changed one), and
    /// rebuild the store's index so that stored content is scrubbed of the current values.
    pub async fn reload(&self) -> Result<(), VaultError> {
        self.load_values().await?;
        self.store.reload().await?;
        Ok(())
    }

    async fn load_values(&self) -> Result<(), VaultError> {
        let rows = self.store.vault_all().await?;
        let mut values = Vec::with_capacity(rows.len());
        let mut info = Vec::with_capacity(rows.len());
        for r in rows {
            let nonce: [u8; 24] = r
                .nonce
                .as_slice()
                .try_into()
                .map_err(|_| VaultError::WrongKey(r.name.clone()))?;
            let plain = self
                .cipher
                .decrypt(&XNonce::from(nonce), r.ciphertext.as_slice())
                .map_err(|_| VaultError::WrongKey(r.name.clone()))?;
            values.push((r.name.clone(), Arc::new(Secret(plain))));
            info.push(VaultEntryInfo {
                name: r.name,
                description: r.description,
                updated_at: r.updated_at,
            });
        }
        let redactor = Redactor::new(values.iter().map(|(n, s)| (n.as_str(), s.expose())));
        self.redactor.store(Arc::new(redactor));
        self.values.store(Arc::new(values));
        self.info.store(Arc::new(info));
        Ok(())
    }

    /// Set an entry. The value is encrypted before it reaches the store and never echoed.
    pub async fn set(
        &self,
        name: &str,
        description: &str,
        value: &[u8],
        actor: &Author,
    ) -> Result<(), VaultError> {
        if !valid_name(name) {
            return Err(VaultError::BadName(name.chars().take(130).collect()));
        }
        if !description_ok(description) {
            return Err(VaultError::BadDescription(name.to_owned()));
        }
        let text_ok =
            std::str::from_utf8(value).is_ok_and(|s| s.chars().count() >= MIN_VALUE_CHARS);
        if !text_ok || value.len() > MAX_VALUE_BYTES {
            return Err(VaultError::BadValue(name.to_owned()));
        }
        let mut nonce = [0u8; 24];
        getrandom::fill(&mut nonce).map_err(|e| VaultError::Key(e.to_string()))?;
        let ciphertext = self
            .cipher
            .encrypt(&XNonce::from(nonce), value)
            .map_err(|_| VaultError::Key("encryption failed".into()))?;
        self.store
            .vault_put(
                &VaultRow {
                    name: name.to_owned(),
                    description: description.to_owned(),
                    nonce: nonce.to_vec(),
                    ciphertext,
                    updated_at: 0,
                },
                actor,
            )
            .await?;
        // Stored content that already held the value is served scrubbed from now on.
        self.reload().await
    }

    /// Remove an entry (recorded as `actor`'s), then reload: from then on its value is neither
    /// resolvable nor redacted. [`VaultError::NotFound`] when no entry has that name.
    pub async fn remove(&self, name: &str, actor: &Author) -> Result<(), VaultError> {
        if !self.store.vault_remove(name, actor).await? {
            return Err(VaultError::NotFound(name.to_owned()));
        }
        self.reload().await
    }

    /// Names and descriptions, never values.
    pub fn list(&self) -> Vec<VaultEntryInfo> {
        self.info.load().as_ref().clone()
    }

    /// Resolve a value for the tool that uses it. Callers must have passed the capability gate.
    pub fn resolve(&self, name: &str) -> Option<Arc<Secret>> {
        self.values
            .load()
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    }

    /// The current redactor (swapped whole when entries change).
    pub fn redactor(&self) -> Arc<Redactor> {
        self.redactor.load_full()
    }
}
