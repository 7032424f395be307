//! `.skillbase-sync.json`: what `sync` wrote into a skills folder, so that it only ever updates
//! or removes its own folders. Read under limits; a manifest that names anything but a skill
//! folder is refused whole.

use super::SyncError;
use super::folder::check_skill_name;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The manifest's file name, in the skills folder.
pub const MANIFEST: &str = ".skillbase-sync.json";

/// The largest manifest read (1 MiB: some 5,000 skills).
pub const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// The most skills a manifest may list.
pub const MAX_MANIFEST_SKILLS: usize = 10_000;

/// The manifest's format version.
const FORMAT: u32 = 1;

/// What `sync` wrote into one skills folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The format version (1).
    pub skillbase_sync: u32,
    /// The target the folder was synced for (`claude-code`, ...).
    pub target: String,
    /// The agent whose view was written (`null`: every active shared skill).
    pub agent: Option<String>,
    /// The store it came from (its location, credentials removed).
    pub store: String,
    /// Each skill folder sync wrote, by name.
    pub skills: BTreeMap<String, Written>,
}

/// One skill folder `sync` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Written {
    /// The digest of what it wrote (the revision's content digest).
    pub digest: String,
    /// The revision written.
    pub rev: i64,
    /// The scope it came from (`shared`, `agent:NAME`).
    pub scope: String,
    /// A digest a sync was about to write when it stopped: the folder holding it is sync's too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
}

impl Written {
    /// Whether a folder whose digest is `digest` is one sync wrote (and nobody edited since).
    pub fn owns(&self, digest: &str) -> bool {
        self.digest == digest || self.pending.as_deref() == Some(digest)
    }
}

impl Manifest {
    /// A new, empty manifest.
    pub fn new(target: &str, agent: Option<&str>, store: &str) -> Manifest {
        Manifest {
            skillbase_sync: FORMAT,
            target: target.to_owned(),
            agent: agent.map(str::to_owned),
            store: store.to_owned(),
            skills: BTreeMap::new(),
        }
    }

    /// Read the manifest in `folder`, if there is one. A manifest that is a link, too large,
    /// not JSON, of another format, or naming anything but a skill folder is refused.
    pub fn read(folder: &Path) -> Result<Option<Manifest>, SyncError> {
        let path = folder.join(MANIFEST);
        let bad = |problem: String| SyncError::Manifest {
            path: path.clone(),
            problem,
        };
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(bad(format!("cannot be read: {e}"))),
        };
        if !meta.file_type().is_file() {
            return Err(bad("is not a plain file (a link or a folder)".into()));
        }
        if meta.len() > MAX_MANIFEST_BYTES {
            return Err(bad(format!(
                "is {} bytes, over the {MAX_MANIFEST_BYTES}-byte limit",
                meta.len()
            )));
        }
        let bytes = super::folder::read_plain_file(&path, MAX_MANIFEST_BYTES)
            .map_err(|e| bad(format!("cannot be read: {e}")))?;
        Manifest::parse(&bytes).map(Some).map_err(bad)
    }

    /// Parse and check a manifest's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
        let m: Manifest =
            serde_json::from_slice(bytes).map_err(|e| format!("is not a sync manifest: {e}"))?;
        if m.skillbase_sync != FORMAT {
            return Err(format!(
                "has format {}, and this build reads format {FORMAT}",
                m.skillbase_sync
            ));
        }
        if m.skills.len() > MAX_MANIFEST_SKILLS {
            return Err(format!(
                "lists {} skills, over the limit of {MAX_MANIFEST_SKILLS}",
                m.skills.len()
            ));
        }
        for (name, w) in &m.skills {
            check_skill_name(name).map_err(|why| {
                format!(
                    "names '{}', {why}: sync never writes such a folder",
                    skillbase_format::text::escape_controls(name)
                )
            })?;
            for d in std::iter::once(&w.digest).chain(w.pending.as_ref()) {
                if d.parse::<skillbase_format::Digest>().is_err() {
                    return Err(format!(
                        "gives skill '{name}' the digest '{}', which is not sha256:<64 hex digits>",
                        skillbase_format::text::escape_controls(d)
                    ));
                }
            }
        }
        Ok(m)
    }

    /// Write the manifest into `folder`, atomically (a temporary file renamed over it).
    pub fn write(&self, folder: &Path) -> Result<(), SyncError> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|e| SyncError::Io {
            path: folder.join(MANIFEST),
            source: std::io::Error::other(e),
        })?;
        bytes.push(b'\n');
        super::folder::write_file_atomic(folder, MANIFEST, &bytes)
    }
}
