//! BM25 relevance of skills to a message, over name, description, triggers and body.
//!
//! Used only to decide which catalog entries are shown in full when the catalog overflows its
//! budget, to answer `search_skills` and to measure routing; it never activates anything.
//!
//! Words are folded (lowercase, accents removed), stopwords of the text's language dropped and
//! the rest stemmed by that language's Snowball stemmer ([`crate::lang`]): a document in the
//! language its description and body are written in, a query in the language of its own words
//! (and also in each document language, so an English skill is found by inflections of its words
//! in a message the guess placed elsewhere). A word of a message in another language that no
//! skill shares is translated by a hand-written lexicon ([`crate::lexicon`]) or, failing that,
//! matched as a cognate (its first five letters). A message of any length is accepted: at most
//! [`MAX_QUERY_WORDS`] words are read and its most specific matching terms scored (at most
//! [`MAX_QUERY_TERMS`], within [`POSTINGS_PER_DOC`] postings per skill).

use crate::fxhash::{Fx, FxMap};
use crate::lang::{self, Lang};
use crate::lexicon;
use crate::trigger::fold_fast;

/// Term-frequency saturation, chosen by measurement (BENCHMARKS.md, "Lexical parameters"): on
/// the repository's own set 0.7 lifts paraphrase recall@5 from 0.525 to 0.550 over the usual
/// 1.2, at a cost of 0.014 hit@1 on SkillRouter's 10,000-skill pool.
const K1: f32 = 0.7;
/// Length normalization: BM25's usual 0.75.
const B: f32 = 0.75;
/// Field weights: a word in the name counts three times, in a trigger twice, in the body a
/// fraction (the body says how, not what for; it is read for the words the description lacks).
const NAME_WEIGHT: f32 = 3.0;
const TRIGGER_WEIGHT: f32 = 2.0;
const BODY_WEIGHT: f32 = 0.3;
/// Words of a body that are indexed (its opening, where the procedure says what it handles).
pub const BODY_WORDS: usize = 300;
/// Most distinct words of one message that are scored (the most specific ones), chosen by
/// measurement with [`POSTINGS_PER_DOC`] (BENCHMARKS.md, "Long messages"): 48 terms, the
/// earlier cap, left the deciding words of long tasks unread (SkillRouter's 10,000-skill pool,
/// lexical hit@1 0.573; 128 terms within the postings budget, 0.733).
pub const MAX_QUERY_TERMS: usize = 128;
/// The words of a message read, most specific first, add at most this many postings per
/// indexed skill (past the first [`MIN_QUERY_TERMS`]): a message's common words (found in a
/// quarter of the skills and more) are left out when it has enough specific ones.
pub const POSTINGS_PER_DOC: usize = 4;
/// Terms always scored, whatever their postings.
pub const MIN_QUERY_TERMS: usize = 8;
/// Most words of one message that are read (a pasted 5 KB task is well within it).
pub const MAX_QUERY_WORDS: usize = 2_000;
/// Words read to guess a text's language.
const DETECT_WORDS: usize = 200;

/// One document: a skill's fields.
#[derive(Debug, Clone, Copy)]
pub struct Doc<'a> {
    /// The skill's name (its words are split at hyphens).
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its `when_to_use` entries (weighed like the description).
    pub when_to_use: &'a [String],
    /// Its trigger phrases.
    pub triggers: &'a [String],
    /// Its body (only the first [`BODY_WORDS`] words are indexed).
    pub body: &'a str,
}

/// Split folded text into words.
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// The first `limit` words of folded text, as [`words`] splits it. ASCII text is split by bytes
/// (for ASCII, `char::is_alphanumeric` is `u8::is_ascii_alphanumeric`) through a table, in one
/// pass that stops at the limit.
fn split_words(text: &str, limit: usize) -> Vec<&str> {
    if !text.is_ascii() {
        return words(text).take(limit).collect();
    }
    static WORD_BYTE: [bool; 256] = {
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            t[b] = (b as u8).is_ascii_alphanumeric();
            b += 1;
        }
        t
    };
    let mut out = Vec::with_capacity((text.len() / 6).min(limit));
    let mut start = usize::MAX;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if WORD_BYTE[b as usize] {
            if start == usize::MAX {
                start = i;
            }
        } else if start != usize::MAX {
            if out.len() == limit {
                return out;
            }
            // ASCII: every byte offset is a char boundary.
            out.push(&text[start..i]);
            start = usize::MAX;
        }
    }
    if start != usize::MAX && out.len() < limit {
        out.push(&text[start..]);
    }
    out
}

/// Folded words to term indices: words of up to 15 bytes (nearly all) keyed by their
/// [`lang::pack`]ed integer, so a lookup hashes and compares integers; longer ones by string.
#[derive(Debug, Clone, Default)]
struct WordMap {
    short: FxMap<u128, u32>,
    long: FxMap<String, u32>,
}

impl WordMap {
    fn get(&self, word: &str) -> Option<u32> {
        match lang::pack(word) {
            Some(k) => self.short.get(&k).copied(),
            None => self.long.get(word).copied(),
        }
    }

    /// Keep the first term given for a word.
    fn insert_first(&mut self, word: String, t: u32) {
        match lang::pack(&word) {
            Some(k) => {
                self.short.entry(k).or_insert(t);
            }
            None => {
                self.long.entry(word).or_insert(t);
            }
        }
    }
}

/// What one term of a message adds to a document's score ([`Bm25::explain`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TermScore {
    /// The message's word that reached the term (as folded).
    pub word: String,
    /// The indexed term (a stem).
    pub term: String,
    /// What it adds to the document's score.
    pub score: f32,
}

/// A BM25 index over a fixed set of documents.
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    /// stem -> its index in `postings`.
    terms: FxMap<String, u32>,
    /// A folded word seen in a document -> its stem's index (so a query word spelled as in a
    /// document needs no stemming).
    surface: WordMap,
    /// Per term: (document, the term's whole BM25 contribution to that document,
    /// `idf · tf·(k1+1) / (tf + k1·(1-b+b·dl/avgdl))`). Nothing in it depends on the query, so it
    /// is computed once here and a query only adds.
    postings: Vec<Vec<(u32, f32)>>,
    /// Per term: the largest contribution in its postings (what it can add to any document).
    best: Vec<f32>,
    doc_len: Vec<f32>,
    /// The languages the documents are written in (query words are also stemmed in each).
    langs: Vec<Lang>,
    /// The first three bytes of every term ([`prefix_key`]). A stem is a prefix of its word in
    /// the ranker's languages (suffixes are removed, never prepended), so a query word whose
    /// first three bytes start no term cannot stem to one: it is skipped without stemming, which
    /// is most of the words of a pasted task.
    prefixes: std::collections::HashSet<u32, std::hash::BuildHasherDefault<Fx>>,
    /// The first [`COGNATE_PREFIX`] letters of each ASCII term -> the terms: a word of a message
    /// in another language that matches no stem is looked up here ("produccion" and
    /// "production", "configuracion" and "configuration" share their start).
    cognates: FxMap<String, Vec<u32>>,
}

/// Letters a word of another language shares with the start of a term to count as its cognate.
const COGNATE_PREFIX: usize = 5;
/// A cognate's share of a term's score (a weaker sign than the same stem).
const COGNATE_WEIGHT: f32 = 0.5;
/// A lexicon translation's share of a term's score ([`crate::lexicon`]).
const TRANSLATION_WEIGHT: f32 = 0.8;

/// The first three bytes of a word as one key (shorter words padded with zeros).
fn prefix_key(word: &str) -> u32 {
    let b = word.as_bytes();
    let at = |i: usize| u32::from(b.get(i).copied().unwrap_or(0));
    (at(0) << 16) | (at(1) << 8) | at(2)
}

/// Per stem of a document: its weighted frequency, and the spellings it was seen as.
type TermFreqs = FxMap<String, (f32, Vec<String>)>;

/// A document's terms: its language, its [`TermFreqs`], and its weighted length. `stems`
/// caches each word's stem per language.
fn doc_terms(
    doc: &Doc<'_>,
    stems: &mut [FxMap<String, Option<String>>; 5],
) -> (Lang, TermFreqs, f32) {
    let description = fold_fast(doc.description);
    let body = fold_fast(doc.body);
    let lang = lang::detect(words(&description).chain(words(&body)), DETECT_WORDS);
    let cache = &mut stems[lang as usize];
    let mut tf = TermFreqs::default();
    let mut len = 0.0;
    let mut add = |folded: &str, w: f32, limit: usize| {
        for word in words(folded).take(limit) {
            if !cache.contains_key(word) {
                let stem = (!lang.is_stopword(word)).then(|| lang.stem(word));
                cache.insert(word.to_owned(), stem);
            }
            let Some(stem) = &cache[word] else { continue };
            let e = match tf.get_mut(stem.as_str()) {
                Some(e) => e,
                None => tf.entry(stem.clone()).or_default(),
            };
            e.0 += w;
            if !e.1.iter().any(|s| s == word) {
                e.1.push(word.to_owned());
            }
            len += w;
        }
    };
    add(&fold_fast(doc.name), NAME_WEIGHT, usize::MAX);
    add(&description, 1.0, usize::MAX);
    for w in doc.when_to_use {
        add(&fold_fast(w), 1.0, usize::MAX);
    }
    for t in doc.triggers {
        add(&fold_fast(t), TRIGGER_WEIGHT, usize::MAX);
    }
    add(&body, BODY_WEIGHT, BODY_WORDS);
    (lang, tf, len)
}

/// Turn each posting's term frequency into its BM25 contribution
/// (`idf·tf·(k1+1)/(tf+k1·(1−b+b·dl/avgdl))`).
fn weigh(postings: &mut [Vec<(u32, f32)>], doc_len: &[f32]) {
    let n = doc_len.len() as f32;
    let avg_len = if doc_len.is_empty() {
        1.0
    } else {
        doc_len.iter().sum::<f32>() / n
    };
    let avg_len = avg_len.max(1.0);
    for list in postings {
        let df = list.len() as f32;
        // A word in more than half the documents ("the", "use", "when") barely separates
        // them (its idf is below ln 2) but would touch most scores on every query: drop it.
        if n >= 20.0 && df * 2.0 > n {
            list.clear();
            list.shrink_to_fit();
            continue;
        }
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        for (doc, tf) in list.iter_mut() {
            let dl = doc_len[*doc as usize];
            let denom = *tf + K1 * (1.0 - B + B * dl / avg_len);
            *tf = idf * (*tf * (K1 + 1.0) / denom);
        }
    }
}

/// The terms (with postings) by their first [`COGNATE_PREFIX`] bytes, for cognates.
fn cognates_of(
    terms: &FxMap<String, u32>,
    postings: &[Vec<(u32, f32)>],
) -> FxMap<String, Vec<u32>> {
    let mut cognates: FxMap<String, Vec<u32>> = FxMap::default();
    for (t, &i) in terms {
        if t.len() >= COGNATE_PREFIX && t.is_ascii() && !postings[i as usize].is_empty() {
            cognates
                .entry(t[..COGNATE_PREFIX].to_owned())
                .or_default()
                .push(i);
        }
    }
    cognates
}

/// The terms one message reaches.
struct QueryTerms<'w> {
    /// A bit per indexed term: the terms a message word reached (only indexed terms are
    /// marked, never the message's other words).
    seen: Vec<u64>,
    /// Terms reached directly, with postings, each once.
    matched: Vec<u32>,
    /// Terms reached indirectly (a translation, a cognate), with their share of the score.
    weak: Vec<(u32, f32)>,
    /// The words already stemmed.
    tried: std::collections::HashSet<&'w str, std::hash::BuildHasherDefault<Fx>>,
    /// When explaining ([`Bm25::explain`]): per term reached, the first message word that
    /// reached it. Empty (and never filled) when ranking.
    words: Option<FxMap<u32, &'w str>>,
}

impl<'w> QueryTerms<'w> {
    /// Remember (when explaining) that message word `w` reached term `t`.
    fn note(&mut self, t: u32, w: &'w str) {
        if let Some(words) = &mut self.words {
            words.entry(t).or_insert(w);
        }
    }

    /// Mark term `t` reached; the first time, keep it when it has postings.
    fn mark(&mut self, t: u32, postings: &[Vec<(u32, f32)>]) {
        let (word, bit) = (t as usize / 64, 1u64 << (t % 64));
        if self.seen[word] & bit == 0 {
            self.seen[word] |= bit;
            if !postings[t as usize].is_empty() {
                self.matched.push(t);
            }
        }
    }
}

impl Bm25 {
    /// Index documents.
    pub fn new<'a>(docs: impl IntoIterator<Item = Doc<'a>>) -> Bm25 {
        let mut terms: FxMap<String, u32> = FxMap::default();
        let mut surface = WordMap::default();
        let mut postings: Vec<Vec<(u32, f32)>> = Vec::new();
        let mut doc_len = Vec::new();
        let mut langs: Vec<Lang> = Vec::new();
        // Each distinct word is stemmed once per language for the whole index (looked up by
        // reference: no allocation for a word seen before).
        let mut stems: [FxMap<String, Option<String>>; 5] = Default::default();
        for (i, doc) in docs.into_iter().enumerate() {
            let (lang, tf, len) = doc_terms(&doc, &mut stems);
            if !langs.contains(&lang) {
                langs.push(lang);
            }
            for (term, (f, spellings)) in tf {
                let next = postings.len() as u32;
                let t = *terms.entry(term).or_insert(next);
                if t == next {
                    postings.push(Vec::new());
                }
                postings[t as usize].push((i as u32, f));
                for w in spellings {
                    surface.insert_first(w, t);
                }
            }
            doc_len.push(len);
        }
        weigh(&mut postings, &doc_len);
        let best = postings
            .iter()
            .map(|l| l.iter().map(|p| p.1).fold(0.0f32, f32::max))
            .collect();
        let prefixes = terms.keys().map(|t| prefix_key(t)).collect();
        let cognates = cognates_of(&terms, &postings);
        Bm25 {
            cognates,
            terms,
            surface,
            postings,
            best,
            doc_len,
            langs,
            prefixes,
        }
    }

    /// Number of documents indexed (document ids run `0..len`, in the order given to `new`).
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    /// Whether no document is indexed (every query then scores nothing).
    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// Score every document against the query; returns one score per document. Each distinct
    /// query term counts once.
    pub fn scores(&self, query: &str) -> Vec<f32> {
        self.scores_folded(&fold_fast(query))
    }

    /// [`Bm25::scores`] on a query already passed through [`fold_fast`].
    pub fn scores_folded(&self, folded: &str) -> Vec<f32> {
        let n = self.doc_len.len();
        let mut scores = vec![0.0f32; n];
        if n == 0 {
            return scores;
        }
        let words = split_words(folded, MAX_QUERY_WORDS);
        let mut q = self.query_terms(&words, false);
        self.keep_specific(&mut q.matched, n);
        for t in &q.matched {
            for &(doc, contribution) in &self.postings[*t as usize] {
                scores[doc as usize] += contribution;
            }
        }
        if !q.weak.is_empty() {
            self.add_weak(q, &mut scores);
        }
        scores
    }

    /// The indexed terms a message's words reach: directly (a spelling, a stem), or weakly (a
    /// translation, a cognate). The message's words are split once, and the stopword masks of
    /// the first ones give its language.
    fn query_terms<'w>(&self, words: &[&'w str], explain: bool) -> QueryTerms<'w> {
        let head: Vec<u8> = words
            .iter()
            .take(DETECT_WORDS)
            .map(|w| lang::stop_mask(w))
            .collect();
        let query_lang = lang::detect_masks(head.iter().copied());
        let mut q = QueryTerms {
            seen: vec![0u64; self.postings.len().div_ceil(64)],
            matched: Vec::new(),
            weak: Vec::new(),
            tried: Default::default(),
            words: explain.then(FxMap::default),
        };
        for (k, &word) in words.iter().enumerate() {
            // A stopword of the message's language is no evidence, even where the index holds
            // it as a term: a skill whose text reads as another language indexes "the", "and"
            // or "to" as rare words, and would top every long English message.
            let mask = match head.get(k) {
                Some(&m) => m,
                None => lang::stop_mask(word),
            };
            if lang::mask_has(mask, query_lang) {
                continue;
            }
            if let Some(t) = self.surface.get(word) {
                q.mark(t, &self.postings);
                q.note(t, word);
                continue;
            }
            self.match_unseen(word, query_lang, &mut q);
        }
        q
    }

    /// A message word not indexed as spelled: its translation (a message in another language;
    /// at a fraction of the English terms' score, a translation may be loose), its stem in the
    /// message's language and in English, else a cognate.
    fn match_unseen<'w>(&self, word: &'w str, query_lang: Lang, q: &mut QueryTerms<'w>) {
        if query_lang != Lang::En
            && let Some(lex) = lexicon::lexicon(query_lang)
            && let Some(english) = lex.translate(word)
        {
            for stem in english {
                if let Some(&t) = self.terms.get(stem.as_str()) {
                    q.weak.push((t, TRANSLATION_WEIGHT));
                    q.note(t, word);
                }
            }
        }
        if !self.prefixes.contains(&prefix_key(word)) {
            return;
        }
        // Each distinct word once, stemmed in the message's language and, for a message in
        // another language, in English too (most skills are written in English).
        if !q.tried.insert(word) {
            return;
        }
        let mut hit = false;
        if let Some(t) = query_lang.stem_memo(word, |s| self.terms.get(s).copied()) {
            q.mark(t, &self.postings);
            q.note(t, word);
            hit = true;
        }
        if query_lang != Lang::En
            && self.langs.contains(&Lang::En)
            && let Some(t) = Lang::En.stem_memo(word, |s| self.terms.get(s).copied())
        {
            q.mark(t, &self.postings);
            q.note(t, word);
            hit = true;
        }
        // A message in another language: a word that matched no stem may still share its
        // start with a term (a cognate), counted at a fraction of the term's score.
        if !hit
            && query_lang != Lang::En
            && word.len() > COGNATE_PREFIX
            && word.is_ascii()
            && let Some(ts) = self.cognates.get(&word[..COGNATE_PREFIX])
        {
            q.weak.extend(ts.iter().map(|&t| (t, COGNATE_WEIGHT)));
            for &t in ts {
                q.note(t, word);
            }
        }
    }

    /// A long message (a pasted log, a 2 KB brief) is scored by its most specific words, the
    /// ones found in the fewest skills: at most [`MAX_QUERY_TERMS`] of them, and, past the
    /// first [`MIN_QUERY_TERMS`], only while their postings stay within [`POSTINGS_PER_DOC`]
    /// per skill. The common words left out barely move a ranking (their idf is small) but
    /// would touch most scores.
    fn keep_specific(&self, matched: &mut Vec<u32>, n: usize) {
        if matched.len() > MAX_QUERY_TERMS {
            matched
                .select_nth_unstable_by_key(MAX_QUERY_TERMS, |&t| self.postings[t as usize].len());
            matched.truncate(MAX_QUERY_TERMS);
        }
        matched.sort_unstable_by_key(|&t| (self.postings[t as usize].len(), t));
        let budget = POSTINGS_PER_DOC * n;
        let mut total = 0;
        let keep = matched
            .iter()
            .position(|&t| {
                total += self.postings[t as usize].len();
                total > budget
            })
            .map_or(matched.len(), |k| k.max(MIN_QUERY_TERMS).min(matched.len()));
        matched.truncate(keep);
    }

    /// The weakly reached terms' share: each term once, at the highest share it was reached
    /// with, and none a message word already matched; a long message keeps its most specific.
    fn add_weak(&self, q: QueryTerms<'_>, scores: &mut [f32]) {
        for (t, share) in self.weak_kept(q.seen, q.weak) {
            for &(doc, contribution) in &self.postings[t as usize] {
                scores[doc as usize] += share * contribution;
            }
        }
    }

    /// The weak terms [`Bm25::add_weak`] scores, with their shares.
    fn weak_kept(&self, seen: Vec<u64>, mut weak: Vec<(u32, f32)>) -> Vec<(u32, f32)> {
        weak.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        weak.dedup_by_key(|w| w.0);
        let message_word = |t: u32| seen[t as usize / 64] & (1u64 << (t % 64)) != 0;
        weak.retain(|&(t, _)| !message_word(t) && !self.postings[t as usize].is_empty());
        if weak.len() > MAX_QUERY_TERMS {
            weak.select_nth_unstable_by_key(MAX_QUERY_TERMS, |&(t, _)| {
                self.postings[t as usize].len()
            });
            weak.truncate(MAX_QUERY_TERMS);
        }
        weak
    }

    /// Why documents score what they do for a message: per document of `docs`, each term of
    /// the message that adds to its score, with the message word that reached it and what it
    /// adds (largest first). The terms and shares are exactly those [`Bm25::scores`] adds, so
    /// a document's entries sum to its score. For `skillbase eval --explain`; ranking never
    /// calls it.
    pub fn explain(&self, query: &str, docs: &[usize]) -> Vec<Vec<TermScore>> {
        let n = self.doc_len.len();
        let folded = fold_fast(query);
        let words = split_words(&folded, MAX_QUERY_WORDS);
        let mut q = self.query_terms(&words, true);
        if n > 0 {
            self.keep_specific(&mut q.matched, n);
        }
        let said = q.words.take().unwrap_or_default();
        let mut kept: Vec<(u32, f32)> = q.matched.iter().map(|&t| (t, 1.0)).collect();
        kept.extend(self.weak_kept(q.seen, q.weak));
        let wanted: FxMap<u32, ()> = kept.iter().map(|&(t, _)| (t, ())).collect();
        let stem_of: FxMap<u32, &str> = self
            .terms
            .iter()
            .filter(|(_, t)| wanted.contains_key(t))
            .map(|(s, &t)| (t, s.as_str()))
            .collect();
        docs.iter()
            .map(|&d| {
                let mut out: Vec<TermScore> = kept
                    .iter()
                    .filter_map(|&(t, share)| {
                        let list = &self.postings[t as usize];
                        let d = u32::try_from(d).ok()?;
                        let at = list.binary_search_by_key(&d, |p| p.0).ok()?;
                        Some(TermScore {
                            word: said.get(&t).map_or("", |w| w).to_owned(),
                            term: stem_of.get(&t).map_or("", |s| s).to_owned(),
                            score: share * list[at].1,
                        })
                    })
                    .collect();
                out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.term.cmp(&b.term)));
                out
            })
            .collect()
    }

    /// Document `doc`'s score for `query` and the documents scoring at least `fraction` of it
    /// (some below may be listed too), with their scores: the same sums, in the same order, as
    /// [`Bm25::scores`] gives them. A query per skill over a library of thousands (the
    /// doctor's near-duplicates) costs what its rare terms reach: a document holding only terms
    /// whose best contributions together stay under the bar cannot reach it, so only the
    /// documents holding one of the other terms are scored.
    pub fn scoring_near(&self, query: &str, doc: u32, fraction: f32) -> (f32, Vec<(u32, f32)>) {
        let n = self.doc_len.len();
        if n == 0 || doc as usize >= n {
            return (0.0, Vec::new());
        }
        let folded = fold_fast(query);
        let words = split_words(&folded, MAX_QUERY_WORDS);
        let mut q = self.query_terms(&words, false);
        self.keep_specific(&mut q.matched, n);
        // The terms with their shares, in the order `scores` adds them.
        let mut kept: Vec<(u32, f32)> = q.matched.iter().map(|&t| (t, 1.0)).collect();
        if !q.weak.is_empty() {
            kept.extend(self.weak_kept(q.seen, q.weak));
        }
        let score_of = |d: u32| -> f32 {
            let mut sum = 0.0f32;
            for &(t, share) in &kept {
                let list = &self.postings[t as usize];
                if let Ok(at) = list.binary_search_by_key(&d, |p| p.0) {
                    sum += if share == 1.0 {
                        list[at].1
                    } else {
                        share * list[at].1
                    };
                }
            }
            sum
        };
        let own = score_of(doc);
        if own <= 0.0 {
            return (own, Vec::new());
        }
        // What a term can add to any document (a little more, for rounding in the sums).
        let bound = |t: u32, share: f32| share * self.best[t as usize] * 1.001;
        let mut by_bound: Vec<(f32, u32)> = kept.iter().map(|&(t, sh)| (bound(t, sh), t)).collect();
        by_bound.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let bar = fraction * own;
        let mut below = 0.0f32;
        let rare_from = by_bound
            .iter()
            .position(|&(b, _)| {
                below += b;
                below >= bar
            })
            .unwrap_or(by_bound.len());
        let mut candidates: Vec<u32> = by_bound[rare_from..]
            .iter()
            .flat_map(|&(_, t)| self.postings[t as usize].iter().map(|p| p.0))
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let near = candidates.into_iter().map(|d| (d, score_of(d))).collect();
        (own, near)
    }

    /// Documents ordered by score (highest first), ties by index.
    pub fn rank(&self, query: &str) -> Vec<(u32, f32)> {
        let mut v: Vec<(u32, f32)> = self
            .scores(query)
            .into_iter()
            .enumerate()
            .map(|(i, s)| (i as u32, s))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skill with a name and a description only.
    fn doc<'a>(name: &'a str, description: &'a str) -> Doc<'a> {
        Doc {
            name,
            description,
            when_to_use: &[],
            triggers: &[],
            body: "",
        }
    }

    #[test]
    fn ranks_by_relevance() {
        let t1 = ["refund".to_owned()];
        let idx = Bm25::new([
            Doc {
                triggers: &t1[..],
                ..doc(
                    "refund-procedure",
                    "Process a customer refund through the payments API",
                )
            },
            doc("sql-review", "Review a SQL migration for locks"),
            doc(
                "release-notes",
                "Draft release notes from merged pull requests",
            ),
        ]);
        let r = idx.rank("the customer wants a refund of the order");
        assert_eq!(r[0].0, 0);
        let r = idx.rank("review this migration");
        assert_eq!(r[0].0, 1);
        let r = idx.rank("Crème brûlée");
        assert!(r.iter().all(|(_, s)| *s == 0.0));
    }

    /// A German message's "am" ("on the", as in "am Freitag") is a stopword, not the "am" of
    /// an English skill's "9 am" (found with `eval --explain`: the message went to the
    /// calendar skill).
    #[test]
    fn german_am_and_um_are_stopwords_of_a_german_message() {
        let idx = Bm25::new([
            doc(
                "find-free-time",
                "Find a free slot in the calendar, say from 9 am to 5 pm",
            ),
            doc("create-reminder", "Set a reminder for later"),
            doc("sql-review", "Review a SQL migration for locks"),
        ]);
        let why = idx.explain("erinnere mich am freitag um 14 uhr an den arzttermin", &[0]);
        assert!(why[0].is_empty(), "{:?}", why[0]);
        // An English message still finds the English word.
        let why = idx.explain("is 9 am free on friday", &[0]);
        assert!(why[0].iter().any(|t| t.word == "am"), "{:?}", why[0]);
    }

    /// `explain` names the words that decided, and its shares are exactly the scores.
    #[test]
    fn explain_gives_each_deciding_word_and_sums_to_the_score() {
        let idx = Bm25::new([
            doc("pptx-builder", "Build a slide deck from an outline"),
            doc(
                "speaker-notes",
                "Write speaker notes for an existing slide deck",
            ),
            doc("sql-review", "Review a SQL migration for locks"),
            doc(
                "release-notes",
                "Draft release notes from merged pull requests",
            ),
        ]);
        let message = "write the speaker notes for my deck";
        let scores = idx.scores(message);
        let why = idx.explain(message, &[1, 0, 2]);
        for (d, terms) in [1usize, 0, 2].iter().zip(&why) {
            let sum: f32 = terms.iter().map(|t| t.score).sum();
            assert!(
                (sum - scores[*d]).abs() < 1e-4,
                "{d}: {sum} vs {}",
                scores[*d]
            );
        }
        let words: Vec<&str> = why[0].iter().map(|t| t.word.as_str()).collect();
        assert!(
            words.contains(&"speaker") && words.contains(&"notes"),
            "{words:?}"
        );
        assert!(why[1].iter().any(|t| t.word == "deck"));
        assert!(!why[1].iter().any(|t| t.word == "speaker"));
        assert!(why[2].is_empty(), "{:?}", why[2]);
        // A word reached through a lexicon carries its share (a Spanish message).
        let es = idx.explain("revisar la migración sql", &[2]);
        assert!(es[0].iter().any(|t| t.term == "sql"), "{es:?}");
    }

    /// Issue 36's bug: a skill whose text reads as another language indexes English stopwords
    /// as rare terms; they must not count for an English message (found in the surface map,
    /// they were scored before the stopword check, and the French skill came first).
    #[test]
    fn stopwords_of_the_message_never_count_even_when_another_language_indexed_them() {
        let topics = [
            "refund",
            "invoice",
            "deploy",
            "migration",
            "calendar",
            "translate",
            "resume",
            "password",
            "backup",
            "report",
            "budget",
            "contract",
            "recipe",
            "playlist",
            "ticket",
            "meeting",
            "expense",
            "newsletter",
            "survey",
            "inventory",
            "shipping",
            "payroll",
            "podcast",
            "workout",
        ];
        let names: Vec<String> = topics.iter().map(|t| format!("{t}-helper")).collect();
        let descriptions: Vec<String> = topics
            .iter()
            .map(|t| format!("Helps with the {t} tasks a user asks about"))
            .collect();
        let mut docs: Vec<Doc> = names
            .iter()
            .zip(&descriptions)
            .map(|(n, d)| doc(n, d))
            .collect();
        docs.push(doc(
            "weather-forecast",
            "Get the weather forecast and local time for a city",
        ));
        docs.push(doc(
            "cuisine-francaise",
            "Des recettes de la cuisine française pour les débutants et pour les enfants, avec le livre « the joy of cooking and baking » que nous aimons dans la cuisine de tous les jours",
        ));
        let idx = Bm25::new(docs);
        let french = (idx.len() - 1) as u32;
        let weather = (idx.len() - 2) as u32;
        let r = idx.rank("what is the weather and the time in the city of my trip");
        assert_eq!(r[0].0, weather, "{r:?}");
        let french_score = r.iter().find(|(i, _)| *i == french).map_or(0.0, |x| x.1);
        assert_eq!(french_score, 0.0, "{r:?}");
        // The French skill is still found by what it says, in French or in English.
        assert_eq!(idx.rank("recettes de cuisine pour débutants")[0].0, french);
        assert_eq!(idx.rank("the joy of cooking")[0].0, french);
    }

    #[test]
    fn inflections_and_languages_are_matched_through_stems() {
        let idx = Bm25::new([
            doc("refund-order", "Refund the payment of a customer's order"),
            doc("cancel-order", "Cancel an order before it ships"),
            doc(
                "pedido-reembolso",
                "Reembolsar el pago de un pedido cuando el cliente lo solicita",
            ),
        ]);
        // Inflections the documents never spell (each word is a stem away).
        assert_eq!(idx.rank("refunding payments")[0].0, 0);
        assert_eq!(idx.rank("cancelled orders")[0].0, 1);
        // A Spanish message finds the Spanish skill through Spanish stems.
        assert_eq!(idx.rank("quiero que me reembolsen los pedidos")[0].0, 2);
        // Stopwords alone match nothing.
        assert!(idx.rank("the a of it").iter().all(|(_, s)| *s == 0.0));
        // A Spanish message's cognates find the English skill ("cancelacion" shares its start
        // with "cancel"), at a fraction of a stem's weight; an English message gets no cognates.
        let idx2 = Bm25::new([
            doc(
                "configure-autoscaling",
                "Configure autoscaling of a production service",
            ),
            doc("cancel-order", "Cancel an order before it ships"),
        ]);
        let r = idx2.rank("necesito la configuracion del escalado para el servicio");
        assert_eq!(r[0].0, 0);
        assert!(idx2.rank("the autoscroller").iter().all(|(_, s)| *s == 0.0));
        // A message far longer than what is read is accepted and still ranked.
        let long = format!("{} refund", "lorem ipsum ".repeat(5_000));
        let _ = idx.rank(&long);
    }

    #[test]
    fn messages_in_other_languages_reach_english_skills_through_the_lexicons() {
        let idx = Bm25::new([
            doc(
                "reset-password",
                "Reset a user's password and sign them out",
            ),
            doc("send-invoice", "Send an invoice to a customer by email"),
            doc("track-shipment", "Track where a customer's order is"),
        ]);
        // No word of these shares a stem or five letters with the skills' words.
        for (message, expected) in [
            ("olvidé mi contraseña y no puedo entrar", 0),
            ("bitte schick dem Kunden die Rechnung", 1),
            ("où est ma commande ? le colis n'arrive pas", 2),
            ("cadê meu pedido? a entrega atrasou", 2),
        ] {
            let r = idx.rank(message);
            assert_eq!(r[0].0, expected, "{message}: {r:?}");
            assert!(r[0].1 > 0.0, "{message}");
        }
        // An English message is never translated: "pedido" is no English word.
        assert!(idx.rank("pedido").iter().all(|(_, s)| *s == 0.0));
    }

    /// What `scoring_near` lists is every document at or over the bar, with the dense score
    /// bit for bit, for each document's own query and for messages: English words, stems, a
    /// translated and a cognate message, a long message past the terms kept.
    #[test]
    fn scoring_near_finds_every_document_over_the_bar_with_its_dense_score() {
        let names: Vec<String> = (0..60).map(|i| format!("skill-{i}")).collect();
        let words = [
            "refund", "tracking", "invoice", "shipment", "password", "deploy", "rollback",
            "schedule", "meeting", "report",
        ];
        let descriptions: Vec<String> = (0..60)
            .map(|i| {
                format!(
                    "Handle the {} and the {} of a customer, then the {}{}",
                    words[i % 10],
                    words[(i * 3 + 1) % 10],
                    words[(i * 7 + 2) % 10],
                    " again".repeat(i % 3)
                )
            })
            .collect();
        let mut docs: Vec<Doc<'_>> = names
            .iter()
            .zip(&descriptions)
            .map(|(n, d)| doc(n, d))
            .collect();
        docs.push(doc(
            "reset-password",
            "Reset a user's password and sign them out",
        ));
        docs.push(doc("produccion", "Desplegar la configuracion a produccion"));
        let idx = Bm25::new(docs);
        let long: String = (0..400)
            .map(|i| format!("word{i} refund customer "))
            .collect();
        let own_queries: Vec<String> = descriptions.clone();
        let messages = [
            "the customer wants a refund of the order",
            "refunds tracked shipments invoices",
            "olvidé mi contraseña y no puedo entrar",
            "configuración de producción del pedido",
            long.as_str(),
            "nothing matches here",
        ];
        let mut listed_fewer = 0;
        for (k, query) in own_queries
            .iter()
            .map(String::as_str)
            .chain(messages)
            .enumerate()
        {
            let dense = idx.scores(query);
            for doc in [k % 62, 61, 0] {
                let (own, near) = idx.scoring_near(query, doc as u32, 0.8);
                assert_eq!(own.to_bits(), dense[doc].to_bits(), "{query}");
                for &(d, s) in &near {
                    assert_eq!(s.to_bits(), dense[d as usize].to_bits(), "{query} {d}");
                }
                let listed: Vec<u32> = near.iter().map(|p| p.0).collect();
                for (d, &s) in dense.iter().enumerate() {
                    if own > 0.0 && s >= 0.8 * own {
                        assert!(listed.contains(&(d as u32)), "{query}: {d} missing");
                    }
                }
                if own > 0.0 && near.len() < dense.iter().filter(|&&s| s > 0.0).count() {
                    listed_fewer += 1;
                }
            }
        }
        // The bar lets it skip documents (the point of it), on most of the own queries.
        assert!(listed_fewer > 60, "{listed_fewer}");
    }

    #[test]
    fn ascii_word_split_matches_words() {
        for text in [
            "",
            "a",
            "  lead and trail  ",
            "refund-procedure, sql_review; c++ x2 (v1.2)\tnew\nline",
            "crème brûlée ß 退款 naïve",
            "___",
        ] {
            let all: Vec<&str> = words(text).collect();
            assert_eq!(split_words(text, usize::MAX), all, "{text:?}");
            for limit in 0..4 {
                assert_eq!(
                    split_words(text, limit),
                    all.iter().copied().take(limit).collect::<Vec<_>>(),
                    "{text:?} {limit}"
                );
            }
        }
    }
}
