//! Where skills come from, read under one set of [`Limits`]: a folder, a folder of skills, a
//! SKILL.md or a zip ([`Source::Path`]), a git repository at a reference ([`Source::Git`],
//! [`git`]), and the lockfile that pins imported skills to their sources ([`lock`]).
//!
//! - [`Reader::read`]: every skill of a source, all or nothing, each a checked bundle with its
//!   signature and its [`Origin`](skillbase_store::Origin) (what the lockfile records).
//! - [`git`]: `git+URL[@ref][#subdir]` over `file://` (read in place), `git://` and `ssh://`
//!   and `https://` (fetched into a bare cache per URL), in pure Rust (gix): no libgit2.
//! - [`lock`]: `skillbase.lock` read, written and checked; what `install --locked` writes and
//!   what `outdated` reports.
//! - [`sync`]: the other way: an agent's skills written into another tool's native skills
//!   folder (`skillbase sync`), with a manifest so that only what sync wrote is ever replaced.
//! - [`marketplace`]: Claude Code plugin marketplaces, read (a folder or a git repository's
//!   folder holding `.claude-plugin/marketplace.json`) and written ([`marketplace::export`]).
//! - GitHub shorthand `owner/repo[/path][@ref]` ([`Source::parse`]), under the reader's git base.
//!
//! Folders and zips are read by the store's pack reader (`skillbase_store::pack`), which the
//! seed folders (`skillbase_store::seed`, synced by the store as they change) and the server's
//! uploads share: a seed folder is a folder source the store follows, under the same per-skill
//! limits ([`Limits::pack`]`.skill`, the store's own). Nothing here writes to the store except
//! [`lock::install`], through `Store::import_from`.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod error;
pub mod git;
mod limits;
pub mod lock;
pub mod marketplace;
mod source;
mod sourced;
pub mod sync;
#[cfg(test)]
mod test_http;

pub use error::SourceError;
pub use limits::Limits;
pub use source::{DEFAULT_GIT_BASE, Reader, Source};
pub use sourced::{Read, Sourced};
