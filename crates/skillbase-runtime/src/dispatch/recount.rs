//! Token counts of texts answered again: a repeated `load_skill` of a skill already active in
//! the session answers the same text on every call (in a shared session, the whole skill
//! rendered again), and counting its tokens was the largest single cost of that call.
//!
//! [`Recount::count`] is exactly [`tokens::count`]: a text counted before is found by its length
//! and then compared byte for byte, so a changed text is always counted afresh. Texts are not
//! hashed: a hash reads every byte at a few cycles each, where the comparison that must be made
//! anyway runs at memory speed (hashing the 3.8 KB answer of the HTTP bench took longer than the
//! rest of the lookup). The cache is bounded in entries, texts of one length and bytes, and
//! emptied when a bound is reached.

use skillbase_route::tokens;
use std::collections::HashMap;
use std::sync::Mutex;

/// Most texts kept.
const MAX_ENTRIES: usize = 256;
/// Most texts of one length kept (a lookup compares at most this many).
const MAX_SAME_LENGTH: usize = 4;
/// Most bytes of text kept.
const MAX_BYTES: usize = 8 * 1024 * 1024;
/// Texts longer than this are counted every time (they would crowd the cache out).
const MAX_TEXT: usize = 256 * 1024;

/// Texts counted before, by their length.
#[derive(Default)]
pub(super) struct Recount {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// Length in bytes → the texts of that length with their token counts, oldest first.
    counts: HashMap<usize, Vec<(Box<str>, u32)>>,
    entries: usize,
    bytes: usize,
}

impl Recount {
    /// The tokens in `text`, as [`tokens::count`] gives them.
    pub(super) fn count(&self, text: &str) -> u32 {
        if text.len() > MAX_TEXT {
            return tokens::count(text);
        }
        {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(same) = cache.counts.get(&text.len())
                && let Some((_, n)) = same.iter().find(|(t, _)| **t == *text)
            {
                return *n;
            }
        }
        let n = tokens::count(text);
        let mut guard = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let cache = &mut *guard;
        if cache.entries >= MAX_ENTRIES || cache.bytes + text.len() > MAX_BYTES {
            cache.counts.clear();
            cache.entries = 0;
            cache.bytes = 0;
        }
        let same = cache.counts.entry(text.len()).or_default();
        // Another call may have counted it meanwhile.
        if same.iter().any(|(t, _)| **t == *text) {
            return n;
        }
        if same.len() >= MAX_SAME_LENGTH {
            // The oldest of this length makes room (same length: the totals do not change).
            same.remove(0);
        } else {
            cache.entries += 1;
            cache.bytes += text.len();
        }
        same.push((text.into(), n));
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(r: &Recount) -> (usize, usize) {
        let cache = r.cache.lock().unwrap();
        let entries = cache.counts.values().map(Vec::len).sum();
        let bytes = cache.counts.values().flatten().map(|(t, _)| t.len()).sum();
        (entries, bytes)
    }

    #[test]
    fn counts_as_tokens_count_does_before_and_after_caching() {
        let r = Recount::default();
        // The first two have the same length and differ in one byte.
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
        assert_eq!(
            totals(&r),
            (texts.len(), texts.iter().map(|t| t.len()).sum())
        );
        assert_eq!(r.cache.lock().unwrap().entries, texts.len());
    }

    #[test]
    fn texts_of_one_length_are_told_apart_and_bounded() {
        let r = Recount::default();
        // Same length, different counts: "a a a a" and "aaaaaaa" and so on.
        let texts: Vec<String> = (0..(MAX_SAME_LENGTH * 3))
            .map(|i| format!("{:>3} {}", i, if i % 2 == 0 { "x y z" } else { "xyzxy" }))
            .collect();
        for _ in 0..2 {
            for t in &texts {
                assert_eq!(r.count(t), tokens::count(t), "{t:?}");
            }
        }
        let cache = r.cache.lock().unwrap();
        assert!(cache.counts.values().all(|v| v.len() <= MAX_SAME_LENGTH));
        drop(cache);
        let (entries, bytes) = totals(&r);
        let cache = r.cache.lock().unwrap();
        assert_eq!((cache.entries, cache.bytes), (entries, bytes));
    }

    #[test]
    fn the_cache_stays_within_its_bounds() {
        let r = Recount::default();
        for i in 0..(MAX_ENTRIES * 2) {
            let t = format!("text number {i}");
            assert_eq!(r.count(&t), tokens::count(&t));
        }
        let (entries, bytes) = totals(&r);
        assert!(entries <= MAX_ENTRIES);
        let cache = r.cache.lock().unwrap();
        assert_eq!((cache.entries, cache.bytes), (entries, bytes));
        drop(cache);
        let long = "word ".repeat(MAX_TEXT / 5 + 1);
        assert_eq!(r.count(&long), tokens::count(&long));
        assert!(
            r.cache
                .lock()
                .unwrap()
                .counts
                .keys()
                .all(|len| *len <= MAX_TEXT)
        );
    }
}
