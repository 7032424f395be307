//! The vault's guard over stored content: checked on write, scrubbed on read.

use super::Store;
use crate::index::SkillEntry;
use skillbase_format::Bundle;
use std::sync::Arc;

/// What the vault asks of the store, installed with [`Store::set_content_guard`]: refuse every
/// revision whose files or message hold a secret, and scrub secrets from stored content before
/// it is served (a value set *after* a revision already held it). Every read of stored content —
/// the index (bodies, descriptions, frontmatter: turns, `load_skill`, listings), [`Store::bundle`]
/// (show, export, diff, `resources/read`, the CLI), [`Store::history`] and [`Store::events`] —
/// goes through [`ContentGuard::scrub`], so no surface can forget it.
pub trait ContentGuard: Send + Sync {
    /// Why `bundle` and `message` may not be written, if they may not.
    fn check(&self, bundle: &Bundle, message: &str) -> std::result::Result<(), String>;
    /// `bytes` with every secret replaced, or `None` when it holds none.
    fn scrub(&self, bytes: &[u8]) -> Option<Vec<u8>>;
}

/// An installed [`ContentGuard`].
pub type WriteGuard = Arc<dyn ContentGuard>;

impl Store {
    /// Install the vault's guard: every bundle is checked before it is written, and stored
    /// content is scrubbed as it is read (see [`ContentGuard`]). Call [`Store::reload`] after the
    /// guard's secrets change, so the index is scrubbed of new ones.
    pub fn set_content_guard(&self, guard: WriteGuard) {
        self.write_guard.store(Arc::new(Some(guard)));
    }

    pub(super) fn guard(&self) -> Option<WriteGuard> {
        self.write_guard.load().as_ref().clone()
    }
}

/// A string scrubbed in place.
pub(super) fn scrub_string(g: &dyn ContentGuard, s: &mut String) {
    if let Some(b) = g.scrub(s.as_bytes()) {
        *s = String::from_utf8_lossy(&b).into_owned();
    }
}

/// Every string of a JSON value (keys too) scrubbed in place.
pub(super) fn scrub_json(g: &dyn ContentGuard, v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => scrub_string(g, s),
        Value::Array(a) => a.iter_mut().for_each(|x| scrub_json(g, x)),
        Value::Object(o) => {
            if o.keys().any(|k| g.scrub(k.as_bytes()).is_some()) {
                let old = std::mem::take(o);
                for (mut k, x) in old {
                    scrub_string(g, &mut k);
                    o.insert(k, x);
                }
            }
            o.values_mut().for_each(|x| scrub_json(g, x));
        }
        _ => {}
    }
}

/// The text fields of a parsed skill scrubbed (what turns, `load_skill`, listings and the MCP
/// manifests serve from the index).
pub(super) fn scrub_entry(g: &dyn ContentGuard, e: &mut SkillEntry) {
    scrub_string(g, &mut e.body);
    scrub_string(g, &mut e.meta.description);
    for t in &mut e.meta.triggers {
        scrub_string(g, t);
    }
    for (_, v) in &mut e.meta.metadata {
        scrub_string(g, v);
    }
    for s in [
        &mut e.meta.license,
        &mut e.meta.compatibility,
        &mut e.meta.allowed_tools,
    ]
    .into_iter()
    .flatten()
    {
        scrub_string(g, s);
    }
    if let Some(i) = &mut e.meta.inputs {
        scrub_json(g, i);
    }
    let mut fm = serde_json::Value::Object((*e.frontmatter).clone());
    scrub_json(g, &mut fm);
    if let serde_json::Value::Object(m) = fm {
        e.frontmatter = Arc::new(m);
    }
}
