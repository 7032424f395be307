//! Token counting with a real tokenizer (tiktoken's o200k_base, embedded in the binary).
//!
//! Counts are exact for OpenAI's o200k models and a close estimate for others.

use std::sync::OnceLock;

/// Tokens in `text` (o200k_base).
pub fn count(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
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
    let _ = count("warm up");
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_tokens() {
        assert_eq!(super::count(""), 0);
        let n = super::count("Hello, world!");
        assert!((2..=5).contains(&n), "{n}");
    }
}
