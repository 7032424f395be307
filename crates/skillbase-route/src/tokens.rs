//! Token counting with a real tokenizer (tiktoken's o200k_base, embedded in the binary).
//!
//! Counts are exact for OpenAI's o200k models and a close estimate for others.
//!
//! **Fast path.** tiktoken splits text into pieces with a regular expression (o200k's pattern
//! needs a backtracking engine: most of the cost of counting a short text), then encodes each
//! piece on its own. For ASCII text the split is done here by hand, following the pattern
//! alternative by alternative, and each piece's token count is looked up in a per-thread cache
//! (filled by asking tiktoken for that piece alone). The count is the same number tiktoken gives
//! for the whole text; a test checks this on many generated texts.

use std::cell::RefCell;
use std::sync::OnceLock;

/// Tokens in `text` (o200k_base).
pub fn count(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    if text.is_ascii() {
        return count_ascii(text);
    }
    count_slow(text)
}

/// Tokens in `text` by tiktoken alone.
fn count_slow(text: &str) -> u32 {
    bpe().encode_ordinary(text).len() as u32
}

fn bpe() -> &'static tiktoken_rs::CoreBPE {
    static BPE: OnceLock<&'static tiktoken_rs::CoreBPE> = OnceLock::new();
    BPE.get_or_init(tiktoken_rs::o200k_base_singleton)
}

/// The first `max` tokens of `text`, as text.
pub fn truncate(text: &str, max: u32) -> String {
    let toks = bpe().encode_ordinary(text);
    if toks.len() <= max as usize {
        return text.to_owned();
    }
    bpe()
        .decode(&toks[..max as usize])
        .unwrap_or_else(|_| text.chars().take(max as usize * 3).collect())
}

/// Load the tokenizer now (it takes a few hundred milliseconds the first time).
pub fn warm_up() {
    let _ = count_slow("warm up");
}

// ---------------------------------------------------------------------------------------------
// ASCII fast path.
//
// o200k_base's pattern (tiktoken-rs `O200K_BASE_PAT_STR`), alternatives tried in order at each
// position, the first that matches giving the next piece:
//
// 1. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
// 2. `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
// 3. `\p{N}{1,3}`
// 4. ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
// 5. `\s*[\r\n]+`
// 6. `\s+(?!\S)`
// 7. `\s+`
//
// In ASCII, `\p{L}` is `[A-Za-z]` (upper case `[A-Z]`, lower case `[a-z]`, no Lt/Lm/Lo/M),
// `\p{N}` is `[0-9]`, and `\s` (Unicode White_Space) is tab, line feed, vertical tab, form feed,
// carriage return and space.

const UPPER: u8 = 1;
const LOWER: u8 = 2;
const DIGIT: u8 = 3;
const SPACE: u8 = 4;
/// Anything else: punctuation, symbols, control characters.
const OTHER: u8 = 5;

const fn class_table() -> [u8; 128] {
    let mut t = [OTHER; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c.is_ascii_uppercase() {
            UPPER
        } else if c.is_ascii_lowercase() {
            LOWER
        } else if c.is_ascii_digit() {
            DIGIT
        } else if matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ') {
            SPACE
        } else {
            OTHER
        };
        b += 1;
    }
    t
}

static CLASS: [u8; 128] = class_table();

#[inline]
fn class(b: &[u8], i: usize) -> u8 {
    CLASS[b[i] as usize]
}

fn is_crlf(c: u8) -> bool {
    c == b'\r' || c == b'\n'
}

/// The end of `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `i`.
fn contraction(b: &[u8], i: usize) -> usize {
    if b.get(i) != Some(&b'\'') {
        return i;
    }
    let lower = |k: usize| b.get(k).map(u8::to_ascii_lowercase);
    match lower(i + 1) {
        Some(b's' | b't' | b'm' | b'd') => i + 2,
        Some(b'r') if lower(i + 2) == Some(b'e') => i + 3,
        Some(b'v') if lower(i + 2) == Some(b'e') => i + 3,
        Some(b'l') if lower(i + 2) == Some(b'l') => i + 3,
        _ => i,
    }
}

fn run(b: &[u8], mut i: usize, class_of: u8) -> usize {
    while i < b.len() && class(b, i) == class_of {
        i += 1;
    }
    i
}

/// The end of the piece that starts at `i` (`i < b.len()`).
fn piece_end(b: &[u8], i: usize) -> usize {
    let n = b.len();
    let c = class(b, i);
    // Alternatives 1 and 2: letters, after at most one character that is neither a letter, a
    // digit, `\r` nor `\n`.
    let letters_from = match c {
        UPPER | LOWER => Some(i),
        DIGIT => None,
        _ if is_crlf(b[i]) => None,
        _ => (i + 1 < n && matches!(class(b, i + 1), UPPER | LOWER)).then_some(i + 1),
    };
    if let Some(j) = letters_from {
        let upper_end = run(b, j, UPPER);
        if upper_end < n && class(b, upper_end) == LOWER {
            // 1: upper case letters, then at least one lower case letter.
            return contraction(b, run(b, upper_end, LOWER));
        }
        if upper_end > j {
            // 2: at least one upper case letter, no lower case after it.
            return contraction(b, upper_end);
        }
        // Neither (no letter at `j`); without the prefix `b[i]` is not a letter either.
    }
    match c {
        // 3: up to three digits.
        DIGIT => {
            let mut e = i + 1;
            while e < n && e < i + 3 && class(b, e) == DIGIT {
                e += 1;
            }
            e
        }
        // 4: symbols (after an optional space), then line breaks and slashes.
        OTHER => other_run(b, i),
        _ => {
            if b[i] == b' ' && i + 1 < n && class(b, i + 1) == OTHER {
                return other_run(b, i + 1);
            }
            // 5, 6, 7: white space.
            let end = run(b, i, SPACE);
            if let Some(last) = (i..end).rev().find(|&k| is_crlf(b[k])) {
                // 5: white space up to its last line break.
                return last + 1;
            }
            if end == n || end - i == 1 {
                // 6 at the end of the text (or 7 for a single character before a non-space).
                end
            } else {
                // 6: all but the last white space character, which goes with what follows.
                end - 1
            }
        }
    }
}

/// Alternative 4 from `j`, where `b[j]` is a symbol.
fn other_run(b: &[u8], j: usize) -> usize {
    let mut e = run(b, j, OTHER);
    while e < b.len() && (is_crlf(b[e]) || b[e] == b'/') {
        e += 1;
    }
    e
}

/// Pieces cached per thread (their count never changes); bounded so odd input cannot grow it.
const CACHE_MAX_ENTRIES: usize = 16 * 1024;
const CACHE_MAX_PIECE: usize = 48;

type PieceCache = crate::fxhash::FxMap<Box<[u8]>, u32>;

thread_local! {
    static PIECES: RefCell<PieceCache> = RefCell::new(PieceCache::default());
}

fn count_ascii(text: &str) -> u32 {
    let b = text.as_bytes();
    PIECES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let mut total = 0;
        let mut i = 0;
        while i < b.len() {
            let e = piece_end(b, i);
            let piece = &b[i..e];
            total += match cache.get(piece) {
                Some(&n) => n,
                None => {
                    // ASCII: every offset is a char boundary.
                    let n = count_slow(&text[i..e]);
                    if piece.len() <= CACHE_MAX_PIECE && cache.len() < CACHE_MAX_ENTRIES {
                        cache.insert(piece.into(), n);
                    }
                    n
                }
            };
            i = e;
        }
        total
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_tokens() {
        assert_eq!(count(""), 0);
        let n = count("Hello, world!");
        assert!((2..=5).contains(&n), "{n}");
    }

    /// The pieces are tiktoken's: split by hand, they give the same count as tiktoken's own
    /// split, on texts built to hit every alternative and the boundaries between them.
    #[test]
    fn ascii_fast_path_counts_like_tiktoken() {
        let alphabet: &[&str] = &[
            "a", "z", "A", "Z", "hello", "World", "HTTP", "JSONData", "iPhone", "0", "7", "42",
            "1234567", " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\x0B", "\x0C",
            "'", "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'Ll", "'d", "'x", "\"", "{", "}",
            ":", ",", ".", "...", "/", "//", "-", "_", "(", ")", "[", "]", "!", "?", "#", "@",
            "\\", "\x00", "\x1f", "\x7f", "=", "+", "*", "<", ">", "|", "~", "`", "$", "%", "^",
            "&", ";",
        ];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |m: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as usize
        };
        let mut texts: Vec<String> = vec![
            r#"{"text":"hello","n":3}"#.into(),
            r#"{"ok": true, "items": [1, 22, 333, 4444], "path": "/a/b//c\n"}"#.into(),
            "Don't STOP, we'll see: it's 12:30 o'clock.\n\n  Next   line\t\tend  ".into(),
            "   leading and trailing   ".into(),
            "a\r\n\r\n  b \n c\t\n".into(),
        ];
        for _ in 0..6000 {
            let len = 1 + next(24);
            let t: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            texts.push(t);
        }
        for t in &texts {
            assert_eq!(count(t), bpe().encode_ordinary(t).len() as u32, "{t:?}");
        }
        // Every piece is matched whole by tiktoken when it stands alone.
        for t in &texts {
            let b = t.as_bytes();
            let mut i = 0;
            while i < b.len() {
                let e = piece_end(b, i);
                assert!(e > i, "{t:?} at {i}");
                i = e;
            }
        }
    }
}
