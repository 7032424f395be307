//! Bearer tokens: generated here, shown once, stored only as SHA-256 hashes; admin or bound to
//! one agent. Every route but the two probes goes through [`middleware`]; `--dev` mode (loopback
//! only) treats every request as the admin.

use crate::error::ApiError;
use sha2::{Digest, Sha256};
use skillbase_store::{AgentName, Author, TokenRecord};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// An admin token (or `--dev` mode, where `token` is `None`).
    Admin {
        /// The admin token's id in the store (`api_tokens`); `None` in `--dev` mode.
        token: Option<i64>,
    },
    /// A token bound to one agent: sees and calls only what that agent may.
    Agent {
        /// The agent the token is bound to.
        agent: AgentName,
        /// The token's id in the store (`api_tokens`).
        token: i64,
    },
}

impl Principal {
    /// Whether the caller holds an admin token (or the server runs in `--dev` mode).
    pub fn is_admin(&self) -> bool {
        matches!(self, Principal::Admin { .. })
    }

    /// The agent a token is bound to.
    pub fn agent(&self) -> Option<&AgentName> {
        match self {
            Principal::Agent { agent, .. } => Some(agent),
            Principal::Admin { .. } => None,
        }
    }

    /// Refuse unless the caller is an admin.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "this route needs an admin token; agent tokens see only their agent's skills, sessions and tools",
            ))
        }
    }

    /// Refuse unless the caller may act as `agent` (admins may act as any agent).
    pub fn require_agent(&self, agent: &AgentName) -> Result<(), ApiError> {
        match self {
            Principal::Admin { .. } => Ok(()),
            Principal::Agent { agent: a, .. } if a == agent => Ok(()),
            // Same answer as a missing agent: a bound token learns nothing about other agents.
            Principal::Agent { .. } => Err(ApiError::not_found(format!("no agent '{agent}'"))),
        }
    }

    /// The token's id in the store; `None` in `--dev` mode (what owns a background job).
    pub fn token_id(&self) -> Option<i64> {
        match self {
            Principal::Admin { token } => *token,
            Principal::Agent { token, .. } => Some(*token),
        }
    }

    /// The author recorded for writes made with this principal.
    pub fn author(&self) -> Author {
        match self {
            Principal::Admin { token: Some(id) } => Author::Human(format!("token-{id}")),
            Principal::Admin { token: None } => Author::Human("dev".into()),
            Principal::Agent { agent, .. } => Author::AgentInline(agent.clone()),
        }
    }
}

/// The prefix of every Skillbase token, so secret scanners can recognise them.
pub const TOKEN_PREFIX: &str = "sbt_";

/// A new random token secret: `sbt_` and 43 base64url characters (256 bits).
pub fn generate_token() -> String {
    use base64::Engine;
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    format!(
        "{TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// Lowercase hex SHA-256 of a token secret: all the store keeps. The secret has 256 bits of
/// entropy, so a fast hash is the right one (no password stretching is needed).
pub fn hash_token(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()).into())
}

fn hex(digest: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    s
}

/// How long a token looked up in the database is trusted before it is looked up again. A
/// revocation through this server takes effect at once; one made on another server sharing a
/// PostgreSQL database as soon as its announcement arrives (milliseconds), and within this time
/// if the announcement is lost (or on SQLite, where there is none).
pub const TOKEN_CACHE_TTL: Duration = Duration::from_secs(2);

/// What a token hash was found to be.
#[derive(Clone)]
enum Known {
    Valid(Principal),
    Unknown,
    Revoked,
}

/// Token lookups, cached briefly by hash.
pub struct Auth {
    /// `--dev`: no tokens; every request is the admin.
    pub dev: bool,
    cache: Mutex<HashMap<[u8; 32], (Instant, Known)>>,
    /// Wakes the watchers of open streams when the cache is cleared (a token changed).
    pub(crate) changed: tokio::sync::Notify,
}

impl Auth {
    /// An empty cache; with `dev`, every request authenticates as the admin without a token.
    pub fn new(dev: bool) -> Auth {
        Auth {
            dev,
            cache: Mutex::new(HashMap::new()),
            changed: tokio::sync::Notify::new(),
        }
    }

    /// Forget every cached lookup (after a token is created or revoked, here or on another
    /// server), and have open streams check their tokens again now.
    pub fn invalidate(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.changed.notify_waiters();
    }

    /// The principal for an `Authorization` header value.
    pub async fn authenticate(
        &self,
        store: &skillbase_store::Store,
        header: Option<&str>,
    ) -> Result<Principal, ApiError> {
        if self.dev {
            return Ok(Principal::Admin { token: None });
        }
        let Some(h) = header else {
            return Err(ApiError::unauthorized(
                "missing bearer token: send `Authorization: Bearer <token>` (create one with `skillbase token create`)",
            ));
        };
        let secret = h
            .strip_prefix("Bearer ")
            .or_else(|| h.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= 256)
            .ok_or_else(|| {
                ApiError::unauthorized("malformed Authorization header: expected `Bearer <token>`")
            })?;
        let digest: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        let cached = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache
                .get(&digest)
                .filter(|(at, _)| at.elapsed() < TOKEN_CACHE_TTL)
                .map(|(_, k)| k.clone())
        };
        let known = match cached {
            Some(k) => k,
            None => {
                let record = store.token_by_hash(&hex(&digest)).await.map_err(|e| {
                    match crate::error::storage_fault(&e) {
                        Some(_) => ApiError::from(e),
                        None => ApiError::internal(format!("token lookup failed: {e}")),
                    }
                })?;
                let known = Known::of(record)?;
                let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                if cache.len() > 10_000 {
                    cache.clear();
                }
                cache.insert(digest, (Instant::now(), known.clone()));
                known
            }
        };
        match known {
            Known::Valid(p) => Ok(p),
            Known::Unknown => Err(ApiError::unauthorized(UNKNOWN_TOKEN)),
            Known::Revoked => Err(ApiError::unauthorized(REVOKED_TOKEN)),
        }
    }
}

/// The 401 for a token this server does not know: what a person reading it in a coding
/// agent's error panel should do next.
pub const UNKNOWN_TOKEN: &str = "unknown token: this server has no such token (mistyped, or made for another store); create one with `skillbase token create --agent NAME` on the server's store and configure the client with it";

/// The 401 for a revoked token (a restart of `serve --demo` revokes the demo token of the
/// start before).
pub const REVOKED_TOKEN: &str = "this token has been revoked: configure the client with a new one (`skillbase token create --agent NAME`, or the token `serve --demo` printed at its latest start; each start revokes the one before)";

impl Known {
    fn of(record: Option<TokenRecord>) -> Result<Known, ApiError> {
        let Some(rec) = record else {
            return Ok(Known::Unknown);
        };
        if rec.revoked_at.is_some() {
            return Ok(Known::Revoked);
        }
        Ok(Known::Valid(match rec.agent {
            None => Principal::Admin {
                token: Some(rec.id),
            },
            Some(a) => Principal::Agent {
                agent: AgentName::parse(&a)
                    .map_err(|e| ApiError::internal(format!("stored token agent: {e}")))?,
                token: rec.id,
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_lowercase_hex_sha256() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let t = generate_token();
        assert!(t.starts_with(TOKEN_PREFIX) && t.len() == 47, "{t}");
        assert_eq!(hash_token(&t).len(), 64);
    }
}
