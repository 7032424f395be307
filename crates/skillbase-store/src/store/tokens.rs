//! API tokens: recorded by the SHA-256 of their secret.

use super::Store;
use crate::error::{Result, StoreError};
use crate::model::{AgentName, Author};
use crate::records::TokenRecord;

impl Store {
    /// Record an API token by the SHA-256 of its secret (the caller generates the secret and
    /// shows it once). `agent: None` makes an admin token.
    pub async fn token_create(
        &self,
        label: &str,
        hash: &str,
        agent: Option<&AgentName>,
        actor: &Author,
    ) -> Result<TokenRecord> {
        crate::model::check_token_label(label).map_err(StoreError::Invalid)?;
        if let Some(a) = agent
            && self.agent(a).await?.is_none()
        {
            return Err(StoreError::AgentNotFound(a.to_string()));
        }
        on_db!(
            self,
            tokens::token_create(
                label,
                hash,
                agent.map(AgentName::as_str),
                &actor.to_string()
            )
        )
    }

    /// Every API token (hashes only), revoked ones included.
    pub async fn tokens(&self) -> Result<Vec<TokenRecord>> {
        on_db!(self, tokens::tokens())
    }

    /// The token whose secret hashes to `hash`, revoked or not.
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>> {
        on_db!(self, tokens::token_by_hash(hash))
    }

    /// Revoke a token; false if it did not exist or was already revoked.
    pub async fn token_revoke(&self, id: i64, actor: &Author) -> Result<bool> {
        on_db!(self, tokens::token_revoke(id, &actor.to_string()))
    }
}
