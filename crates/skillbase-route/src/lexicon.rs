//! Hand-written bilingual lexicons (Spanish, French, Portuguese, German → English) for the
//! lexical ranker: a word of a message in another language that no skill shares, and that is no
//! cognate of a skill's word, is looked up here and the English words it gives are matched
//! instead ("contraseña" → password, "Rechnung" → invoice, "commande" → order).
//!
//! The lists (`src/lexicon/*.tsv`) were written for Skillbase as general workplace vocabulary
//! (support, billing, devops, development, data, documents, security, HR, sales, legal,
//! marketing, projects, cloud, productivity), about a thousand words per language, without
//! looking at the evaluation set. They are compiled in; nothing is read at run time.
//!
//! A message word is found by its folded spelling (lowercase, accents removed) or, failing that,
//! by its stem in the lexicon's language, so inflections find their base form ("facturas",
//! "facturé" → "factura"). Two entries sharing a stem are merged only when their translations
//! overlap (a verb and its noun); otherwise that stem is left out ("saber" and "sábado") and only
//! the exact spellings are found.

use crate::fxhash::FxMap;
use crate::lang::Lang;
use crate::trigger::fold_fast;
use std::sync::OnceLock;

/// Most English words one entry may give.
const MAX_TARGETS: usize = 3;

/// One language's lexicon, its translations kept as English stems (the index's terms).
#[derive(Debug)]
pub struct Lexicon {
    /// Folded source word → English stems.
    surface: FxMap<String, Box<[String]>>,
    /// Source-language stem → English stems (unambiguous stems only).
    stems: FxMap<String, Box<[String]>>,
    lang: Lang,
}

impl Lexicon {
    /// Parse a lexicon: `word<TAB>english [english ...]` per line, `#` comments, blank lines
    /// ignored. Errors name the line and what is wrong with it.
    pub fn parse(lang: Lang, text: &str) -> Result<Lexicon, String> {
        let mut surface: FxMap<String, Box<[String]>> = FxMap::default();
        // stem -> (entries' target sets)
        let mut by_stem: FxMap<String, Vec<Vec<String>>> = FxMap::default();
        let mut spelled = std::collections::HashSet::new();
        for (n, line) in text.lines().enumerate() {
            let n = n + 1;
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((word, english)) = line.split_once('\t') else {
                return Err(format!("line {n}: expected `word<TAB>english words`"));
            };
            if english.contains('\t') {
                return Err(format!("line {n}: more than one tab"));
            }
            let folded = fold_fast(word.trim());
            if folded.is_empty() || !folded.chars().all(char::is_alphanumeric) {
                return Err(format!(
                    "line {n}: `{word}` is not one word (letters and digits only)"
                ));
            }
            let targets: Vec<&str> = english.split_whitespace().collect();
            if targets.is_empty() || targets.len() > MAX_TARGETS {
                return Err(format!(
                    "line {n}: give 1 to {MAX_TARGETS} English words, not {}",
                    targets.len()
                ));
            }
            if let Some(bad) = targets
                .iter()
                .find(|t| !t.bytes().all(|b| b.is_ascii_lowercase()))
            {
                return Err(format!("line {n}: `{bad}` is not a lowercase English word"));
            }
            let mut stems: Vec<String> = Vec::with_capacity(targets.len());
            for t in targets {
                if Lang::En.is_stopword(t) {
                    continue;
                }
                let s = Lang::En.stem(t);
                if !stems.contains(&s) {
                    stems.push(s);
                }
            }
            if stems.is_empty() {
                return Err(format!("line {n}: only stopwords on the English side"));
            }
            if !spelled.insert(word.trim()) {
                return Err(format!("line {n}: `{word}` is listed twice"));
            }
            by_stem
                .entry(lang.stem(&folded))
                .or_default()
                .push(stems.clone());
            // Two spellings that differ only by accents ("março", "marco") fold alike: the
            // folded word gives both translations.
            let entry = surface.entry(folded).or_default();
            let mut all = std::mem::take(entry).into_vec();
            for s in stems {
                if !all.contains(&s) {
                    all.push(s);
                }
            }
            *entry = all.into_boxed_slice();
        }
        let mut stems: FxMap<String, Box<[String]>> = FxMap::default();
        for (stem, sets) in by_stem {
            // Merge when every entry shares a translation with the first (a verb and its noun);
            // an unrelated pair leaves the stem out.
            let first = &sets[0];
            if sets[1..]
                .iter()
                .all(|s| s.iter().any(|t| first.contains(t)))
            {
                let mut all: Vec<String> = Vec::new();
                for t in sets.into_iter().flatten() {
                    if !all.contains(&t) {
                        all.push(t);
                    }
                }
                stems.insert(stem, all.into_boxed_slice());
            }
        }
        Ok(Lexicon {
            surface,
            stems,
            lang,
        })
    }

    /// Number of distinct folded words.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.surface.len()
    }

    /// The English stems a folded word translates to, if the lexicon knows it.
    pub fn translate(&self, folded: &str) -> Option<&[String]> {
        if let Some(t) = self.surface.get(folded) {
            return Some(t);
        }
        self.lang
            .stem_memo(folded, |s| self.stems.get(s).map(|t| &t[..]))
    }
}

fn source(lang: Lang) -> Option<&'static str> {
    match lang {
        Lang::En => None,
        Lang::Es => Some(include_str!("lexicon/es.tsv")),
        Lang::Fr => Some(include_str!("lexicon/fr.tsv")),
        Lang::Pt => Some(include_str!("lexicon/pt.tsv")),
        Lang::De => Some(include_str!("lexicon/de.tsv")),
    }
}

/// The lexicon from `lang` into English (none for English), parsed on first use.
pub fn lexicon(lang: Lang) -> Option<&'static Lexicon> {
    static LEXICONS: [OnceLock<Option<Lexicon>>; 5] = [const { OnceLock::new() }; 5];
    LEXICONS[lang as usize]
        .get_or_init(|| {
            let text = source(lang)?;
            match Lexicon::parse(lang, text) {
                Ok(l) => Some(l),
                Err(e) => {
                    // The lists are compiled in and checked by the tests below; a broken one
                    // disables itself rather than stopping a turn.
                    tracing::error!(?lang, error = %e, "lexicon skipped");
                    None
                }
            }
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_lexicon_parses() {
        for lang in [Lang::Es, Lang::Fr, Lang::Pt, Lang::De] {
            let text = source(lang).expect("a lexicon");
            let l = Lexicon::parse(lang, text).unwrap_or_else(|e| panic!("{lang:?}: {e}"));
            assert!(l.len() >= 600, "{lang:?}: only {} entries", l.len());
        }
        assert!(lexicon(Lang::En).is_none());
    }

    #[test]
    fn words_and_their_inflections_translate_to_english_stems() {
        let es = lexicon(Lang::Es).expect("Spanish");
        assert_eq!(
            es.translate("contrasena"),
            Some(&["password".to_owned()][..])
        );
        // An inflection found by its stem.
        let facturas = es.translate("facturas").expect("facturas");
        assert!(facturas.iter().any(|t| t == "invoic"), "{facturas:?}");
        let de = lexicon(Lang::De).expect("German");
        assert!(de.translate("rechnung").is_some());
        assert!(es.translate("zzzz").is_none());
    }

    #[test]
    fn unrelated_entries_sharing_a_stem_are_found_only_by_spelling() {
        let l = Lexicon::parse(
            Lang::Es,
            "saber\tknow\nsábado\tsaturday\nenviar\tsend\nenvío\tshipment send\n",
        )
        .expect("parses");
        assert_eq!(l.translate("sabado"), Some(&["saturday".to_owned()][..]));
        // "sabe" stems like both "saber" and "sabado": ambiguous, so not found.
        assert_eq!(l.translate("sabe"), None);
        // A verb and its noun share a translation: merged.
        let sends = l.translate("enviamos").expect("enviamos");
        assert!(sends.iter().any(|t| t == "send"), "{sends:?}");
    }

    #[test]
    fn spellings_that_differ_by_accents_give_both_translations() {
        let l = Lexicon::parse(Lang::Pt, "março\tmarch\nmarco\tmilestone\n").expect("parses");
        let both = l.translate("marco").expect("marco");
        assert_eq!(both.len(), 2, "{both:?}");
    }

    #[test]
    fn malformed_lines_are_refused_with_their_number() {
        for (text, says) in [
            ("pedido order\n", "line 1"),
            ("# c\npedido\torder\tx\n", "line 2: more than one tab"),
            ("dos palabras\torder\n", "not one word"),
            ("pedido\t\n", "1 to 3"),
            ("pedido\ta b c d\n", "1 to 3"),
            ("pedido\tOrder\n", "lowercase"),
            ("pedido\tthe\n", "stopwords"),
            ("pedido\torder\npedido\trequest\n", "twice"),
        ] {
            let e = Lexicon::parse(Lang::Es, text).expect_err(text);
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}
