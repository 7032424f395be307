//! The vault's encrypted entries (the store never sees a value in clear).

use super::Store;
use crate::error::Result;
use crate::model::Author;
use crate::records::VaultRow;

impl Store {
    /// Store an encrypted vault entry (the store never sees the value in clear).
    pub async fn vault_put(&self, row: &VaultRow, actor: &Author) -> Result<()> {
        on_db!(self, vault::vault_put(row, &actor.to_string()))
    }

    /// Remove a vault entry; false if it did not exist.
    pub async fn vault_remove(&self, name: &str, actor: &Author) -> Result<bool> {
        on_db!(self, vault::vault_remove(name, &actor.to_string()))
    }

    /// Every vault entry, encrypted.
    pub async fn vault_all(&self) -> Result<Vec<VaultRow>> {
        on_db!(self, vault::vault_all())
    }
}
