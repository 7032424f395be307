//! BERT's WordPiece tokenizer, as Hugging Face `tokenizers` runs it from a tokenizer.json.
//!
//! The pipeline is the one the file declares for all-MiniLM-L6-v2, step for step:
//!
//! 1. Added tokens (`[CLS]`, `[SEP]`, `[MASK]`, ... with `normalized: false`) are matched in the
//!    raw text and become their ids directly.
//! 2. `BertNormalizer`: drop NUL, U+FFFD and control-like characters (Cc, Cf, Co, Cs, but
//!    not tab, newline, carriage return); turn whitespace into spaces; put spaces around CJK
//!    ideographs; strip accents (NFD, then drop non-spacing marks); lowercase char by char.
//! 3. `BertPreTokenizer`: split on whitespace, and isolate each punctuation character.
//! 4. `WordPiece`: greedy longest match first, `##` for continuations, the whole word is `[UNK]`
//!    when a piece is missing or the word has more than `max_input_chars_per_word` characters.
//! 5. `[CLS] ... [SEP]`, truncated to the limit (the special tokens count, as in
//!    sentence-transformers' `max_seq_length`).
//!
//! The text is processed piece by piece (a piece ends at whitespace) and processing stops once
//! the limit is reached, so a megabyte of text costs no more than its first few hundred words.
//! Doing the NFD per piece is exact: canonical reordering never crosses a whitespace character.

use crate::error::EmbedError;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// A WordPiece tokenizer read from a Hugging Face tokenizer.json of the BERT kind.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    /// Whole-word pieces.
    vocab: HashMap<String, u32>,
    /// Continuation pieces, keyed without their prefix.
    continuations: HashMap<String, u32>,
    unk_id: u32,
    cls_id: u32,
    sep_id: u32,
    max_input_chars_per_word: usize,
    /// Added tokens matched in the raw text, longest first.
    added: Vec<(String, u32)>,
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
    max_id: u32,
}

fn field<'a>(v: &'a Value, key: &str, path: &Path, what: &str) -> Result<&'a Value, EmbedError> {
    v.get(key)
        .ok_or_else(|| EmbedError::config(path, format!("{what} has no \"{key}\"")))
}

/// The error for a tokenizer.json this reader does not handle.
fn unsupported(path: &Path, what: &str) -> EmbedError {
    EmbedError::config(
        path,
        format!("{what}: only BERT WordPiece tokenizers (as all-MiniLM-L6-v2's) are supported"),
    )
}

/// A WordPiece vocabulary, split by the continuation prefix.
struct Pieces {
    /// Whole-word pieces.
    vocab: HashMap<String, u32>,
    /// Continuation pieces, keyed without their prefix.
    continuations: HashMap<String, u32>,
    /// The largest id of either.
    max_id: u32,
}

/// `model.vocab`, a non-empty object of u32 ids, split by `model.continuing_subword_prefix`
/// (`##` by default).
fn read_vocab(model: &Value, path: &Path) -> Result<Pieces, EmbedError> {
    let prefix = model
        .get("continuing_subword_prefix")
        .and_then(Value::as_str)
        .unwrap_or("##");
    let vocab_json = field(model, "vocab", path, "model")?
        .as_object()
        .ok_or_else(|| EmbedError::config(path, "model.vocab is not an object"))?;
    if vocab_json.is_empty() {
        return Err(EmbedError::config(path, "model.vocab is empty"));
    }
    let mut vocab = HashMap::with_capacity(vocab_json.len());
    let mut continuations = HashMap::new();
    let mut max_id = 0u32;
    for (piece, id) in vocab_json {
        let id = id
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| {
                EmbedError::config(path, format!("vocab id of {piece:?} is not a u32"))
            })?;
        max_id = max_id.max(id);
        match piece.strip_prefix(prefix) {
            Some(rest) if !prefix.is_empty() => continuations.insert(rest.to_owned(), id),
            _ => vocab.insert(piece.clone(), id),
        };
    }
    Ok(Pieces {
        vocab,
        continuations,
        max_id,
    })
}

/// The steps of the normalizer that are on.
struct NormalizerFlags {
    clean_text: bool,
    handle_chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
}

/// Normalizer: BertNormalizer (or none, every step off).
fn read_normalizer(json: &Value, path: &Path) -> Result<NormalizerFlags, EmbedError> {
    match json.get("normalizer") {
        None | Some(Value::Null) => Ok(NormalizerFlags {
            clean_text: false,
            handle_chinese_chars: false,
            strip_accents: false,
            lowercase: false,
        }),
        Some(n) if n.get("type").and_then(Value::as_str) == Some("BertNormalizer") => {
            let flag =
                |k: &str, default: bool| n.get(k).and_then(Value::as_bool).unwrap_or(default);
            let lowercase = flag("lowercase", true);
            Ok(NormalizerFlags {
                clean_text: flag("clean_text", true),
                handle_chinese_chars: flag("handle_chinese_chars", true),
                strip_accents: n
                    .get("strip_accents")
                    .and_then(Value::as_bool)
                    .unwrap_or(lowercase),
                lowercase,
            })
        }
        Some(_) => Err(unsupported(path, "the normalizer is not BertNormalizer")),
    }
}

/// Post-processor: [CLS] $A [SEP], from a TemplateProcessing or BertProcessing. The names of
/// the two special tokens.
fn read_cls_sep<'a>(json: &'a Value, path: &Path) -> Result<(&'a str, &'a str), EmbedError> {
    match json.get("post_processor") {
        Some(p) if p.get("type").and_then(Value::as_str) == Some("BertProcessing") => {
            let tok = |k: &str| p.get(k).and_then(|v| v.get(0)).and_then(Value::as_str);
            Ok((tok("cls").unwrap_or("[CLS]"), tok("sep").unwrap_or("[SEP]")))
        }
        Some(p) if p.get("type").and_then(Value::as_str) == Some("TemplateProcessing") => {
            let single = p
                .get("single")
                .and_then(Value::as_array)
                .ok_or_else(|| unsupported(path, "post_processor.single is missing"))?;
            fn special(v: &Value) -> Option<&str> {
                v.get("SpecialToken")
                    .and_then(|s| s.get("id"))
                    .and_then(Value::as_str)
            }
            match single.as_slice() {
                [first, seq, last] if seq.get("Sequence").is_some() => Ok((
                    special(first).ok_or_else(|| unsupported(path, "post_processor.single[0]"))?,
                    special(last).ok_or_else(|| unsupported(path, "post_processor.single[2]"))?,
                )),
                _ => Err(unsupported(
                    path,
                    "post_processor.single is not [CLS] $A [SEP]",
                )),
            }
        }
        _ => Err(unsupported(
            path,
            "the post_processor is not [CLS] $A [SEP]",
        )),
    }
}

/// `added_tokens`, each with content and id and matched as written (not normalized, not
/// single-word, not stripped); the empty ones dropped, the rest longest first.
fn read_added_tokens(json: &Value, path: &Path) -> Result<Vec<(String, u32)>, EmbedError> {
    let mut added = Vec::new();
    if let Some(list) = json.get("added_tokens").and_then(Value::as_array) {
        for t in list {
            let content = t.get("content").and_then(Value::as_str);
            let id = t
                .get("id")
                .and_then(Value::as_u64)
                .and_then(|i| u32::try_from(i).ok());
            let (Some(content), Some(id)) = (content, id) else {
                return Err(EmbedError::config(
                    path,
                    "an added token has no content or id",
                ));
            };
            let plain = t.get("normalized").and_then(Value::as_bool) == Some(false)
                && t.get("single_word").and_then(Value::as_bool) != Some(true)
                && t.get("lstrip").and_then(Value::as_bool) != Some(true)
                && t.get("rstrip").and_then(Value::as_bool) != Some(true);
            if !plain {
                return Err(unsupported(
                    path,
                    "an added token is normalized, single_word or stripped",
                ));
            }
            if !content.is_empty() {
                added.push((content.to_owned(), id));
            }
        }
    }
    added.sort_by_key(|a| std::cmp::Reverse(a.0.len()));
    Ok(added)
}

impl Tokenizer {
    /// Reads a tokenizer.json.
    pub fn load(path: &Path) -> Result<Tokenizer, EmbedError> {
        let bytes = crate::read_file(path)?;
        let json: Value = serde_json::from_slice(&bytes).map_err(|source| EmbedError::Json {
            path: path.to_owned(),
            source,
        })?;
        Tokenizer::from_json(&json, path)
    }

    /// Builds the tokenizer from a parsed tokenizer.json; `path` is only for messages.
    pub fn from_json(json: &Value, path: &Path) -> Result<Tokenizer, EmbedError> {
        let model = field(json, "model", path, "tokenizer.json")?;
        if model.get("type").and_then(Value::as_str) != Some("WordPiece") {
            return Err(unsupported(path, "model.type is not \"WordPiece\""));
        }
        let unk = model
            .get("unk_token")
            .and_then(Value::as_str)
            .unwrap_or("[UNK]");
        let max_input_chars_per_word = model
            .get("max_input_chars_per_word")
            .and_then(Value::as_u64)
            .unwrap_or(100) as usize;
        let pieces = read_vocab(model, path)?;
        let id_of = |token: &str| -> Result<u32, EmbedError> {
            pieces.vocab.get(token).copied().ok_or_else(|| {
                EmbedError::config(path, format!("{token} is not in the vocabulary"))
            })
        };
        let unk_id = id_of(unk)?;
        let norm = read_normalizer(json, path)?;
        match json.get("pre_tokenizer") {
            Some(p) if p.get("type").and_then(Value::as_str) == Some("BertPreTokenizer") => {}
            _ => {
                return Err(unsupported(
                    path,
                    "the pre_tokenizer is not BertPreTokenizer",
                ));
            }
        }
        let (cls, sep) = read_cls_sep(json, path)?;
        let cls_id = id_of(cls)?;
        let sep_id = id_of(sep)?;
        let added = read_added_tokens(json, path)?;
        let max_id = added.iter().map(|a| a.1).fold(pieces.max_id, u32::max);

        Ok(Tokenizer {
            vocab: pieces.vocab,
            continuations: pieces.continuations,
            unk_id,
            cls_id,
            sep_id,
            max_input_chars_per_word,
            added,
            clean_text: norm.clean_text,
            handle_chinese_chars: norm.handle_chinese_chars,
            strip_accents: norm.strip_accents,
            lowercase: norm.lowercase,
            max_id,
        })
    }

    /// The largest token id this tokenizer can produce.
    pub fn max_id(&self) -> u32 {
        self.max_id
    }

    /// Token ids of `text`: `[CLS]`, the word pieces, `[SEP]`, at most `max_tokens` in all
    /// (at least 2: an empty text is `[CLS] [SEP]`).
    pub fn encode(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        let budget = max_tokens.max(2) - 2;
        let mut ids = Vec::with_capacity(budget.min(1024) + 2);
        ids.push(self.cls_id);
        let mut state = State {
            piece: String::new(),
            scratch: String::new(),
            word: String::new(),
        };
        let mut rest = text;
        'outer: while !rest.is_empty() {
            if ids.len() > budget {
                break;
            }
            // Added tokens are matched in the raw text, before any normalisation.
            if let Some((content, id)) = self
                .added
                .iter()
                .find(|(c, _)| rest.starts_with(c.as_str()))
            {
                if !self.flush(&mut state, &mut ids, budget) {
                    break 'outer;
                }
                if ids.len() - 1 < budget {
                    ids.push(*id);
                }
                rest = &rest[content.len()..];
                continue;
            }
            let mut chars = rest.chars();
            let Some(c) = chars.next() else { break };
            rest = chars.as_str();
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    if !self.flush(&mut state, &mut ids, budget) {
                        break 'outer;
                    }
                    continue;
                }
            } else if c.is_whitespace() {
                if !self.flush(&mut state, &mut ids, budget) {
                    break 'outer;
                }
                continue;
            }
            state.piece.push(c);
        }
        self.flush(&mut state, &mut ids, budget);
        ids.truncate(budget + 1);
        ids.push(self.sep_id);
        ids
    }

    /// Tokenizes the pending piece into `ids`; false once the budget is spent.
    fn flush(&self, st: &mut State, ids: &mut Vec<u32>, budget: usize) -> bool {
        if st.piece.is_empty() {
            return ids.len() - 1 < budget;
        }
        // Chinese characters get spaces around them.
        let piece: &str = if self.handle_chinese_chars && st.piece.chars().any(is_chinese_char) {
            st.scratch.clear();
            for c in st.piece.chars() {
                if is_chinese_char(c) {
                    st.scratch.push(' ');
                    st.scratch.push(c);
                    st.scratch.push(' ');
                } else {
                    st.scratch.push(c);
                }
            }
            std::mem::swap(&mut st.piece, &mut st.scratch);
            &st.piece
        } else {
            &st.piece
        };
        let mut normalized = String::with_capacity(piece.len());
        if self.strip_accents {
            for c in piece.nfd() {
                let mark = get_general_category(c) == GeneralCategory::NonspacingMark
                    && !legacy_unknown(c);
                if !mark && !LEGACY_NONSPACING.contains(&c) {
                    push_lower(&mut normalized, c, self.lowercase);
                }
            }
        } else {
            for c in piece.chars() {
                push_lower(&mut normalized, c, self.lowercase);
            }
        }
        st.piece.clear();
        // Pre-tokenize: whitespace splits, punctuation stands alone.
        for c in normalized.chars() {
            if c.is_whitespace() {
                self.word_piece(&mut st.word, ids);
            } else if is_punctuation(c) {
                self.word_piece(&mut st.word, ids);
                st.word.push(c);
                self.word_piece(&mut st.word, ids);
            } else {
                st.word.push(c);
            }
            if ids.len() > budget {
                st.word.clear();
                return false;
            }
        }
        self.word_piece(&mut st.word, ids);
        ids.len() - 1 < budget
    }

    /// WordPiece of one word (cleared afterwards).
    fn word_piece(&self, word: &mut String, ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > self.max_input_chars_per_word {
            ids.push(self.unk_id);
            word.clear();
            return;
        }
        let mark = ids.len();
        let mut start = 0;
        while start < word.len() {
            let table = if start == 0 {
                &self.vocab
            } else {
                &self.continuations
            };
            let rest = &word[start..];
            let mut end = rest.len();
            let found = loop {
                if let Some(&id) = table.get(&rest[..end]) {
                    break Some(id);
                }
                match rest[..end].char_indices().next_back() {
                    Some((i, _)) if i > 0 => end = i,
                    _ => break None,
                }
            };
            match found {
                Some(id) => {
                    ids.push(id);
                    start += end;
                }
                None => {
                    ids.truncate(mark);
                    ids.push(self.unk_id);
                    break;
                }
            }
        }
        word.clear();
    }
}

struct State {
    piece: String,
    scratch: String,
    word: String,
}

fn push_lower(out: &mut String, c: char, lowercase: bool) {
    if lowercase {
        out.extend(c.to_lowercase());
    } else {
        out.push(c);
    }
}

/// Whitespace as BertNormalizer sees it.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control, format, private-use and surrogate characters (Cc, Cf, Co, Cs), except tab, newline
/// and carriage return. Unassigned code points (Cn) are kept, as `tokenizers` does: they become
/// `[UNK]`.
fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') || legacy_unknown(c) {
        return false;
    }
    matches!(
        get_general_category(c),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::PrivateUse
            | GeneralCategory::Surrogate
    )
}

/// ASCII punctuation (which includes symbols such as `$` and `+`) or Unicode punctuation (P*).
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || LEGACY_PUNCTUATION.contains(&c)
        || !legacy_unknown(c)
            && matches!(
                get_general_category(c),
                GeneralCategory::ConnectorPunctuation
                    | GeneralCategory::DashPunctuation
                    | GeneralCategory::OpenPunctuation
                    | GeneralCategory::ClosePunctuation
                    | GeneralCategory::InitialPunctuation
                    | GeneralCategory::FinalPunctuation
                    | GeneralCategory::OtherPunctuation
            )
}

/// Code points that Hugging Face `tokenizers` does not know: its character classes come from
/// the `unicode_categories` crate, whose tables predate them (they were assigned in Unicode 9
/// and later), so it treats them as ordinary letters where current tables see a mark,
/// punctuation or a format character. Matching that keeps the token ids identical for every
/// Unicode scalar value. Found by the `token_sweep` test: run it with this table emptied and
/// `SKILLBASE_TEST_SWEEP_DIFF=FILE`, then join the listed code points into ranges.
const LEGACY_UNKNOWN: &[(u32, u32)] = &[
    (0x061D, 0x061D),
    (0x07FD, 0x07FD),
    (0x0890, 0x0891),
    (0x0897, 0x089F),
    (0x08CA, 0x08E2),
    (0x09FD, 0x09FE),
    (0x0A76, 0x0A76),
    (0x0AFA, 0x0AFF),
    (0x0B55, 0x0B55),
    (0x0C04, 0x0C04),
    (0x0C3C, 0x0C3C),
    (0x0C77, 0x0C77),
    (0x0C84, 0x0C84),
    (0x0D00, 0x0D00),
    (0x0D3B, 0x0D3C),
    (0x0D81, 0x0D81),
    (0x0EBA, 0x0EBA),
    (0x0ECE, 0x0ECE),
    (0x166D, 0x166D),
    (0x1734, 0x1734),
    (0x180F, 0x180F),
    (0x1885, 0x1886),
    (0x1ABF, 0x1ACE),
    (0x1B4E, 0x1B4F),
    (0x1B7D, 0x1B7F),
    (0x1DF6, 0x1DFB),
    (0x2E43, 0x2E4F),
    (0x2E52, 0x2E5D),
    (0xA82C, 0xA82C),
    (0xA8C5, 0xA8C5),
    (0xA8FF, 0xA8FF),
    (0xA9BD, 0xA9BD),
    (0x10D24, 0x10D27),
    (0x10D69, 0x10D6E),
    (0x10EAB, 0x10EAD),
    (0x10EFC, 0x10EFF),
    (0x10F46, 0x10F50),
    (0x10F55, 0x10F59),
    (0x10F82, 0x10F89),
    (0x11070, 0x11070),
    (0x11073, 0x11074),
    (0x110C2, 0x110C2),
    (0x110CD, 0x110CD),
    (0x111C9, 0x111C9),
    (0x111CF, 0x111CF),
    (0x1123E, 0x1123E),
    (0x11241, 0x11241),
    (0x1133B, 0x1133B),
    (0x113BB, 0x113C0),
    (0x113CE, 0x113CE),
    (0x113D0, 0x113D0),
    (0x113D2, 0x113D2),
    (0x113D4, 0x113D5),
    (0x113D7, 0x113D8),
    (0x113E1, 0x113E2),
    (0x11438, 0x1143F),
    (0x11442, 0x11444),
    (0x11446, 0x11446),
    (0x1144B, 0x1144F),
    (0x1145A, 0x1145B),
    (0x1145D, 0x1145E),
    (0x11660, 0x1166C),
    (0x116B9, 0x116B9),
    (0x1171E, 0x1171E),
    (0x1182F, 0x11837),
    (0x11839, 0x1183B),
    (0x1193B, 0x1193C),
    (0x1193E, 0x1193E),
    (0x11943, 0x11946),
    (0x119D4, 0x119D7),
    (0x119DA, 0x119DB),
    (0x119E0, 0x119E0),
    (0x119E2, 0x119E2),
    (0x11A01, 0x11A0A),
    (0x11A33, 0x11A38),
    (0x11A3B, 0x11A47),
    (0x11A51, 0x11A56),
    (0x11A59, 0x11A5B),
    (0x11A8A, 0x11A96),
    (0x11A98, 0x11A9C),
    (0x11A9E, 0x11AA2),
    (0x11B00, 0x11B09),
    (0x11BE1, 0x11BE1),
    (0x11C30, 0x11C36),
    (0x11C38, 0x11C3D),
    (0x11C3F, 0x11C3F),
    (0x11C41, 0x11C45),
    (0x11C70, 0x11C71),
    (0x11C92, 0x11CA7),
    (0x11CAA, 0x11CB0),
    (0x11CB2, 0x11CB3),
    (0x11CB5, 0x11CB6),
    (0x11D31, 0x11D36),
    (0x11D3A, 0x11D3A),
    (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D45),
    (0x11D47, 0x11D47),
    (0x11D90, 0x11D91),
    (0x11D95, 0x11D95),
    (0x11D97, 0x11D97),
    (0x11EF3, 0x11EF4),
    (0x11EF7, 0x11EF8),
    (0x11F00, 0x11F01),
    (0x11F36, 0x11F3A),
    (0x11F40, 0x11F40),
    (0x11F42, 0x11F4F),
    (0x11F5A, 0x11F5A),
    (0x11FFF, 0x11FFF),
    (0x12FF1, 0x12FF2),
    (0x13430, 0x13440),
    (0x13447, 0x13455),
    (0x1611E, 0x16129),
    (0x1612D, 0x1612F),
    (0x16D6D, 0x16D6F),
    (0x16E97, 0x16E9A),
    (0x16F4F, 0x16F4F),
    (0x16FE2, 0x16FE2),
    (0x16FE4, 0x16FE4),
    (0x1CF00, 0x1CF2D),
    (0x1CF30, 0x1CF46),
    (0x1E000, 0x1E006),
    (0x1E008, 0x1E018),
    (0x1E01B, 0x1E021),
    (0x1E023, 0x1E024),
    (0x1E026, 0x1E02A),
    (0x1E08F, 0x1E08F),
    (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE),
    (0x1E2EC, 0x1E2EF),
    (0x1E4EC, 0x1E4EF),
    (0x1E5EE, 0x1E5EF),
    (0x1E5FF, 0x1E5FF),
    (0x1E944, 0x1E94A),
    (0x1E95E, 0x1E95F),
];

/// Characters whose category changed since those tables: `tokenizers` still sees punctuation
/// (U+166D CANADIAN SYLLABICS CHI SIGN, now So; U+111C9 SHARADA SANDHI MARK, now Mn) ...
const LEGACY_PUNCTUATION: [char; 2] = ['\u{166D}', '\u{111C9}'];
/// ... and non-spacing marks (U+1734 HANUNOO SIGN PAMUDPOD and U+1171E AHOM CONSONANT SIGN
/// MEDIAL RA, now Mc).
const LEGACY_NONSPACING: [char; 2] = ['\u{1734}', '\u{1171E}'];

/// Whether `tokenizers` sees `c` as an ordinary character for lack of data about it.
fn legacy_unknown(c: char) -> bool {
    let c = c as u32;
    LEGACY_UNKNOWN
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// The CJK Unified Ideographs blocks BERT treats as words of their own.
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tiny() -> Tokenizer {
        let vocab: serde_json::Map<String, Value> = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff",
            "##able", ",", "!", "cafe", "中", "a",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), json!(i)))
        .collect();
        let j = json!({
            "added_tokens": [
                {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                {"id": 4, "content": "[MASK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
            ],
            "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing", "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 9, "vocab": vocab}
        });
        Tokenizer::from_json(&j, Path::new("tokenizer.json")).unwrap()
    }

    #[test]
    fn pipeline_on_a_tiny_vocabulary() {
        let t = tiny();
        assert_eq!(t.encode("", 256), vec![2, 3]);
        assert_eq!(t.encode(" \t\n ", 256), vec![2, 3]);
        assert_eq!(t.encode("Hello, WORLD!", 256), vec![2, 5, 10, 6, 11, 3]);
        assert_eq!(t.encode("unaffable", 256), vec![2, 7, 8, 9, 3]);
        assert_eq!(t.encode("unaffx", 256), vec![2, 1, 3]);
        assert_eq!(t.encode("Café", 256), vec![2, 12, 3]);
        assert_eq!(t.encode("a中a", 256), vec![2, 14, 13, 14, 3]);
        // Longer than max_input_chars_per_word (9): one [UNK].
        assert_eq!(t.encode("aaaaaaaaaa", 256), vec![2, 1, 3]);
        // NUL and control characters vanish without splitting the word; U+0085 (a control
        // character that is also whitespace) is removed, not a separator.
        assert_eq!(t.encode("hel\0lo\u{7}", 256), vec![2, 5, 3]);
        assert_eq!(t.encode("hel\u{85}lo", 256), vec![2, 5, 3]);
        // Added tokens are matched in the raw text.
        assert_eq!(t.encode("hello[MASK]world", 256), vec![2, 5, 4, 6, 3]);
        assert_eq!(t.encode("[mask]", 256), vec![2, 1, 1, 1, 3]);
    }

    #[test]
    fn truncation_counts_the_special_tokens() {
        let t = tiny();
        let text = "hello world ".repeat(100);
        assert_eq!(t.encode(&text, 4), vec![2, 5, 6, 3]);
        assert_eq!(t.encode(&text, 5), vec![2, 5, 6, 5, 3]);
        assert_eq!(t.encode(&text, 0), vec![2, 3]);
        assert_eq!(t.encode("unaffable", 3), vec![2, 7, 3]);
        assert_eq!(t.encode("hello [MASK] [MASK]", 4), vec![2, 5, 4, 3]);
    }

    #[test]
    fn hostile_inputs_do_not_panic() {
        let t = tiny();
        let mega = "x".repeat(1 << 20);
        assert_eq!(t.encode(&mega, 256), vec![2, 1, 3]);
        let mixed: String = (0..200_000u32).filter_map(char::from_u32).collect();
        let ids = t.encode(&mixed, 256);
        assert!(ids.len() <= 256 && ids[0] == 2 && *ids.last().unwrap() == 3);
        let punct = "!".repeat(1 << 20);
        assert_eq!(t.encode(&punct, 256).len(), 256);
        assert_eq!(t.encode("\0\0\0\u{feff}\u{200b}", 256), vec![2, 3]);
    }

    #[test]
    fn rejects_other_tokenizers() {
        let bad = [
            json!({}),
            json!({"model": {"type": "BPE", "vocab": {}}}),
            json!({"model": {"type": "WordPiece", "vocab": {}}}),
            json!({"model": {"type": "WordPiece", "vocab": {"a": 0}}}),
            json!({"model": {"type": "WordPiece", "vocab": {"[UNK]": -1}}}),
            json!({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}, "pre_tokenizer": {"type": "Whitespace"}}),
        ];
        for j in bad {
            let err = Tokenizer::from_json(&j, Path::new("tokenizer.json")).unwrap_err();
            assert!(err.to_string().starts_with("tokenizer.json"), "{err}");
        }
    }
}
