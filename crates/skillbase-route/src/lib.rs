//! What the model sees, decided purely: no I/O, no async runtime, no store. Given an index
//! snapshot, an agent and a message, it answers what the model is shown this turn and why; the
//! runtime keeps the caches, the sessions and the events.
//!
//! - [`agent`] and [`index`]: the nouns a view reads (an agent's configuration, the skills'
//!   active entries), plain data the store keeps and re-exports.
//! - [`view`]: an agent's view, everything a turn needs precomputed; `AgentView::relevance` is
//!   the one ranking.
//! - [`turn`]: the phases of a turn (place the bodies, plan and render the catalog, offer the
//!   tools) and the report of every decision.
//! - [`tooldef`]: a tool as offered, and the vocabulary of `load_skill` and `search_skills`.
//! - [`requires`]: `requires:` decided over what the environment [`requires::Provides`].
//! - [`invoke`]: explicit invocation (`/name args`, `$name`) and argument substitution.
//! - [`paths`]: activation by the file paths a turn names (`paths:` globs).
//! - [`trigger`]: text folding and deterministic activation, one Aho-Corasick pass over
//!   folded text.
//! - [`lang`] and [`lexicon`]: language guessing from stopwords, stemming (en, es, fr, pt, de),
//!   and the cross-language lexicons that map a word onto an English one.
//! - [`rank`]: BM25F over a skill's fields (name, description, triggers, body), language-aware.
//! - [`fusion`]: the semantic stage's arithmetic — a view's vectors as one matrix, centring,
//!   and the fusion of lexical and semantic scores.
//! - [`passage`]: a long message cut into passages of prose, each encoded on its own.
//! - [`confidence`]: a calibrated confidence per ranked skill (a softmax with "none of these").
//! - [`tokens`]: token counts with a real tokenizer (o200k_base), with a fast path.
//!
//! Ranking and turns can be tested, benchmarked and changed here without building the store or
//! server (`tests/turns.rs`: the data-driven turn fixtures; `benches/turn.rs`).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod agent;
pub mod confidence;
pub mod fusion;
pub(crate) mod fxhash;
pub mod index;
pub mod invoke;
pub mod lang;
pub mod lexicon;
#[cfg(feature = "openapi")]
mod openapi;
pub mod passage;
pub mod paths;
pub mod rank;
pub mod requires;
pub mod tokens;
pub mod tooldef;
pub mod trigger;
pub mod turn;
pub mod view;
