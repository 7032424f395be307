//! Languages for lexical ranking: a cheap guess of a text's language from its stopwords, the
//! stopwords themselves, and a Snowball stemmer per language.
//!
//! Every word here is folded as [`crate::trigger::fold_fast`] folds text (lowercase, accents
//! removed), because the ranker compares folded words; stemming folded words is slightly less
//! exact than stemming the original spelling, but documents and queries are treated alike, which
//! is what matching needs.

use crate::fxhash::FxMap;
use rust_stemmers::{Algorithm, Stemmer};
use std::sync::OnceLock;

/// Most words [`Lang::stem_memo`] keeps per language and thread.
pub const MEMO_WORDS: usize = 65_536;

/// The languages the ranker stems and has stopwords for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lang {
    /// English (also the answer when nothing says otherwise).
    En,
    /// Spanish.
    Es,
    /// French.
    Fr,
    /// Portuguese.
    Pt,
    /// German.
    De,
}

impl Lang {
    /// Every language, English first.
    pub const ALL: [Lang; 5] = [Lang::En, Lang::Es, Lang::Fr, Lang::Pt, Lang::De];

    fn index(self) -> usize {
        self as usize
    }

    /// Whether `word` (folded) is one of this language's stopwords.
    pub fn is_stopword(self, word: &str) -> bool {
        stop_mask(word) & (1 << self.index()) != 0
    }

    /// The word's stem (the word itself when the stemmer keeps it).
    pub fn stem(self, word: &str) -> String {
        stemmer(self).stem(word).into_owned()
    }

    /// [`Lang::stem`] through a per-thread memo: a Snowball run costs about a microsecond, and
    /// the words of an agent's messages repeat (Zipf). The memo holds at most [`MEMO_WORDS`]
    /// words per language and starts over when full; words longer than 32 bytes are not kept.
    pub fn stem_memo<R>(self, word: &str, f: impl FnOnce(&str) -> R) -> R {
        thread_local! {
            static MEMO: std::cell::RefCell<[FxMap<String, String>; 5]> =
                Default::default();
        }
        if word.len() > 32 {
            return f(&self.stem(word));
        }
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            let memo = &mut m[self.index()];
            if let Some(s) = memo.get(word) {
                return f(s);
            }
            if memo.len() >= MEMO_WORDS {
                memo.clear();
            }
            let s = self.stem(word);
            let r = f(&s);
            memo.insert(word.to_owned(), s);
            r
        })
    }
}

const EN: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "if", "in",
    "into", "is", "it", "its", "just", "me", "my", "no", "not", "of", "on", "or", "our", "please",
    "so", "some", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "up", "us", "was", "we", "were", "what", "when", "where", "which", "who",
    "will", "with", "would", "you", "your",
];
const ES: &[&str] = &[
    "a", "al", "como", "con", "de", "del", "el", "en", "era", "es", "esa", "ese", "eso", "esta",
    "este", "esto", "favor", "ha", "hay", "la", "las", "le", "les", "lo", "los", "me", "mi", "mis",
    "muy", "necesito", "no", "nos", "o", "para", "pero", "por", "que", "quiero", "se", "si", "sin",
    "son", "su", "sus", "te", "tu", "un", "una", "unas", "unos", "y", "ya", "yo",
];
const FR: &[&str] = &[
    "a", "au", "aux", "avec", "ce", "ces", "cette", "comme", "dans", "de", "des", "du", "elle",
    "en", "est", "et", "il", "ils", "je", "la", "le", "les", "leur", "ma", "mais", "me", "mes",
    "mon", "ne", "nous", "ou", "par", "pas", "plus", "pour", "qu", "que", "qui", "sa", "se", "ses",
    "son", "sont", "sur", "ta", "te", "tes", "ton", "tu", "un", "une", "vous", "y",
];
const PT: &[&str] = &[
    "a", "ao", "as", "com", "como", "da", "das", "de", "do", "dos", "e", "ela", "ele", "em",
    "esse", "essa", "esta", "este", "eu", "isso", "mais", "mas", "meu", "minha", "muito", "na",
    "nao", "nas", "no", "nos", "o", "os", "ou", "para", "pelo", "pela", "por", "preciso", "que",
    "quero", "se", "seu", "sua", "um", "uma", "voce",
];
const DE: &[&str] = &[
    "aber", "am", "auch", "auf", "aus", "bei", "bis", "bitte", "das", "dass", "dem", "den", "der",
    "des", "die", "dieser", "dieses", "du", "ein", "eine", "einem", "einen", "einer", "es", "fur",
    "hat", "ich", "im", "in", "ist", "kein", "keine", "mein", "meine", "mich", "mir", "mit",
    "nach", "nicht", "noch", "oder", "sie", "sind", "um", "und", "von", "was", "wenn", "wie",
    "wir", "zu", "zum", "zur",
];

/// The sorted stopword list of a language.
fn stopwords(lang: Lang) -> &'static [&'static str] {
    static SORTED: OnceLock<[Vec<&'static str>; 5]> = OnceLock::new();
    let lists = SORTED.get_or_init(|| {
        [EN, ES, FR, PT, DE].map(|l| {
            let mut v = l.to_vec();
            v.sort_unstable();
            v
        })
    });
    &lists[lang.index()]
}

/// Which languages have `word` as a stopword, one bit per language (bit `Lang as usize`): one
/// hash lookup answers for all five.
pub(crate) fn stop_mask(word: &str) -> u8 {
    static MASKS: OnceLock<FxMap<u128, u8>> = OnceLock::new();
    let masks = MASKS.get_or_init(|| {
        let mut m = FxMap::default();
        for lang in Lang::ALL {
            for w in stopwords(lang) {
                let k = pack(w).expect("stopwords are short");
                *m.entry(k).or_insert(0) |= 1 << lang.index();
            }
        }
        m
    });
    if word.len() > 12 {
        return 0;
    }
    pack(word).and_then(|k| masks.get(&k).copied()).unwrap_or(0)
}

/// Whether a [`stop_mask`] has `lang`'s bit.
pub(crate) fn mask_has(mask: u8, lang: Lang) -> bool {
    mask & (1 << lang.index()) != 0
}

/// A word of 1 to 15 bytes as one integer, the same for the same bytes and different for
/// different ones: a hash key compared in one instruction instead of a string compare. The
/// word's first and last bytes are read as two overlapping integers that, with the length, cover
/// every byte: up to 8 bytes, the first 4 and the last 4 in the lower half and the length in the
/// upper; 9 to 15 bytes, the first 8 in the lower half and the last 7 with the length (in the
/// top byte, which is zero in the first kind) in the upper. `None` for the empty word and
/// longer ones.
pub(crate) fn pack(word: &str) -> Option<u128> {
    let b = word.as_bytes();
    let n = b.len();
    let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let u64_at = |i: usize| {
        u64::from_le_bytes([
            b[i],
            b[i + 1],
            b[i + 2],
            b[i + 3],
            b[i + 4],
            b[i + 5],
            b[i + 6],
            b[i + 7],
        ])
    };
    let low: u64 = match n {
        0 => return None,
        1..=3 => u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
        4..=8 => u64::from(u32_at(0)) | u64::from(u32_at(n - 4)) << 32,
        9..=15 => {
            let last7 = u64_at(n - 8) >> 8;
            let high = last7 | (n as u64) << 56;
            return Some(u128::from(u64_at(0)) | u128::from(high) << 64);
        }
        _ => return None,
    };
    Some(u128::from(low) | (n as u128) << 64)
}

fn stemmer(lang: Lang) -> &'static Stemmer {
    static STEMMERS: OnceLock<[Stemmer; 5]> = OnceLock::new();
    let all = STEMMERS.get_or_init(|| {
        [
            Algorithm::English,
            Algorithm::Spanish,
            Algorithm::French,
            Algorithm::Portuguese,
            Algorithm::German,
        ]
        .map(Stemmer::create)
    });
    &all[lang.index()]
}

/// Among the first `limit` folded words: how many are English stopwords, and the most that are
/// stopwords of one other language (a word in several lists counts for each).
pub fn stopword_hits<'w>(words: impl IntoIterator<Item = &'w str>, limit: usize) -> (usize, usize) {
    let mut hits = [0usize; 5];
    for w in words.into_iter().take(limit) {
        let mask = stop_mask(w);
        for lang in Lang::ALL {
            if mask & (1 << lang.index()) != 0 {
                hits[lang.index()] += 1;
            }
        }
    }
    let other = Lang::ALL
        .iter()
        .filter(|l| **l != Lang::En)
        .map(|l| hits[l.index()])
        .max()
        .unwrap_or(0);
    (hits[Lang::En.index()], other)
}

/// Guess the language of folded words: the language with the most stopwords among the first
/// `limit` words, when it has at least two and more than English; otherwise English.
pub fn detect<'w>(words: impl IntoIterator<Item = &'w str>, limit: usize) -> Lang {
    detect_masks(words.into_iter().take(limit).map(stop_mask))
}

/// [`detect`] from the words' [`stop_mask`]s.
pub(crate) fn detect_masks(masks: impl IntoIterator<Item = u8>) -> Lang {
    let mut hits = [0usize; 5];
    for mask in masks {
        if mask == 0 {
            continue;
        }
        for lang in Lang::ALL {
            if mask & (1 << lang.index()) != 0 {
                hits[lang.index()] += 1;
            }
        }
    }
    let mut best = Lang::En;
    for lang in Lang::ALL {
        if hits[lang.index()] > hits[best.index()] {
            best = lang;
        }
    }
    if hits[best.index()] < 2 {
        Lang::En
    } else {
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_words_are_equal_exactly_when_the_words_are() {
        let mut words: Vec<String> = Vec::new();
        let alphabet = ["a", "b", "é", "z", "1"];
        // Every word of up to 4 letters over a small alphabet, and longer ones that differ in
        // one byte at every position, up to and past 16 bytes.
        let mut frontier = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for w in &frontier {
                for a in alphabet {
                    next.push(format!("{w}{a}"));
                }
            }
            words.extend(next.iter().cloned());
            frontier = next;
        }
        for n in 5..=18 {
            let base = "q".repeat(n);
            words.push(base.clone());
            for i in 0..n {
                let mut b = base.clone().into_bytes();
                b[i] = b'r';
                words.push(String::from_utf8(b).expect("ascii"));
            }
        }
        words.sort();
        words.dedup();
        let mut seen: std::collections::HashMap<u128, &str> = Default::default();
        for w in &words {
            match pack(w) {
                Some(k) => {
                    assert!(w.len() <= 15, "{w}");
                    if let Some(other) = seen.insert(k, w) {
                        panic!("{w:?} and {other:?} packed alike");
                    }
                }
                None => assert!(w.is_empty() || w.len() > 15, "{w}"),
            }
        }
        assert_eq!(pack(""), None);
    }

    fn words(s: &str) -> Vec<String> {
        crate::rank::words(&crate::trigger::fold_fast(s))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn detects_the_language_of_real_requests() {
        for (text, want) in [
            ("I want a refund for my order, it never arrived", Lang::En),
            ("quiero que me devuelvan el dinero de mi pedido", Lang::Es),
            (
                "je voudrais annuler ma commande, elle est en retard",
                Lang::Fr,
            ),
            ("preciso cancelar o meu pedido, por favor", Lang::Pt),
            ("ich möchte meine Bestellung bitte stornieren", Lang::De),
            ("refund", Lang::En),
            ("", Lang::En),
        ] {
            let w = words(text);
            assert_eq!(detect(w.iter().map(String::as_str), 200), want, "{text}");
        }
    }

    #[test]
    fn stems_inflections_together_and_knows_its_stopwords() {
        assert_eq!(Lang::En.stem("refunds"), Lang::En.stem("refunding"));
        assert_eq!(Lang::Es.stem("pedidos"), Lang::Es.stem("pedido"));
        assert_eq!(Lang::Fr.stem("commandes"), Lang::Fr.stem("commande"));
        assert_eq!(Lang::De.stem("bestellungen"), Lang::De.stem("bestellung"));
        assert!(Lang::En.is_stopword("the") && !Lang::En.is_stopword("refund"));
        assert!(Lang::Pt.is_stopword("nao"));
        for lang in Lang::ALL {
            let s = stopwords(lang);
            assert!(
                s.windows(2).all(|w| w[0] < w[1]),
                "{lang:?} sorted, no repeats"
            );
            // Every stopword is folded as the ranker folds text.
            assert!(
                s.iter().all(|w| crate::trigger::fold_fast(w) == *w),
                "{lang:?}"
            );
        }
    }
}
