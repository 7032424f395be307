//! Skillbase's routing arithmetic, pure: no I/O, no async runtime, no store. Given texts, it
//! answers which skills a message is about and how much text costs; the runtime decides what
//! to do with the answer.
//!
//! - [`agent`] and [`index`]: the nouns routing reads (an agent's configuration, the skills'
//!   active entries), plain data the store keeps and re-exports.
//! - [`trigger`]: text folding and deterministic activation, one Aho-Corasick pass over
//!   folded text.
//! - [`lang`] and [`lexicon`]: language guessing from stopwords, stemming (en, es, fr, pt, de),
//!   and the cross-language lexicons that map a word onto an English one.
//! - [`rank`]: BM25F over a skill's fields (name, description, triggers, body), language-aware.
//! - [`fusion`]: the semantic stage's arithmetic — a view's vectors as one matrix, centring,
//!   and the fusion of lexical and semantic scores.
//! - [`tokens`]: token counts with a real tokenizer (o200k_base), with a fast path.
//!
//! Ranking can be tested, benchmarked and changed here without building the store or server.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod agent;
pub mod fusion;
pub(crate) mod fxhash;
pub mod index;
pub mod lang;
pub mod lexicon;
#[cfg(feature = "openapi")]
mod openapi;
pub mod rank;
pub mod tokens;
pub mod trigger;
