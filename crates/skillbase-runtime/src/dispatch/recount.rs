//! Token counts of texts answered again: a repeated `load_skill` of a skill already active in
//! the session answers the same text on every call (in a shared session, the whole skill
//! rendered again), and counting its tokens was the largest single cost of that call.
//!
//! [`Recount::count`] is exactly [`tokens::count`]: a text counted before is looked up by its
//! whole content (hash, then byte comparison), so a changed text is always counted afresh. The
//! cache is bounded in entries and bytes and emptied when either bound is reached.

use skillbase_route::tokens;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

/// Most texts kept.
const MAX_ENTRIES: usize = 256;
/// Most bytes of text kept.
const MAX_BYTES: usize = 8 * 1024 * 1024;
/// Texts longer than this are counted every time (they would crowd the cache out).
const MAX_TEXT: usize = 256 * 1024;

/// Texts counted before, by the hash of their content.
#[derive(Default)]
pub(super) struct Recount {
    hasher: std::hash::RandomState,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// Content hash → (the text, its token count).
    counts: HashMap<u64, (Box<str>, u32)>,
    bytes: usize,
}

impl Recount {
    /// The tokens in `text`, as [`tokens::count`] gives them.
    pub(super) fn count(&self, text: &str) -> u32 {
        if text.len() > MAX_TEXT {
            return tokens::count(text);
        }
        let key = self.hasher.hash_one(text);
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((t, n)) = cache.counts.get(&key)
                && **t == *text
            {
                return *n;
            }
        }
        let n = tokens::count(text);
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.counts.len() >= MAX_ENTRIES || cache.bytes + text.len() > MAX_BYTES {
            cache.counts.clear();
            cache.bytes = 0;
        }
        if let Some((old, _)) = cache.counts.insert(key, (text.into(), n)) {
            cache.bytes -= old.len();
        }
        cache.bytes += text.len();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_as_tokens_count_does_before_and_after_caching() {
        let r = Recount::default();
        let texts = [
            "Skill 'x' is already active in this session (revision 3); here it is again.\n# x\n\n1. step",
            "Skill 'x' is already active in this session (revision 4); here it is again.\n# x\n\n1. step",
            "déjà vu: non-ASCII text goes through tiktoken",
            "",
        ];
        for _ in 0..3 {
            for t in texts {
                assert_eq!(r.count(t), tokens::count(t), "{t:?}");
            }
        }
        assert_eq!(r.cache.lock().unwrap().counts.len(), texts.len());
    }

    #[test]
    fn the_cache_stays_within_its_bounds() {
        let r = Recount::default();
        for i in 0..(MAX_ENTRIES * 2) {
            let t = format!("text number {i}");
            assert_eq!(r.count(&t), tokens::count(&t));
        }
        let cache = r.cache.lock().unwrap();
        assert!(cache.counts.len() <= MAX_ENTRIES);
        let bytes: usize = cache.counts.values().map(|(t, _)| t.len()).sum();
        assert_eq!(bytes, cache.bytes);
        drop(cache);
        let long = "word ".repeat(MAX_TEXT / 5 + 1);
        assert_eq!(r.count(&long), tokens::count(&long));
        assert!(
            r.cache
                .lock()
                .unwrap()
                .counts
                .values()
                .all(|(t, _)| t.len() <= MAX_TEXT)
        );
    }
}
