//! Git sources, `git+URL[@ref][#subdir]` (supply chain): parsing the spec,
//! fetching the repository into a cache, resolving the reference to a commit and reading the
//! skills of that commit's tree, with limits, all or nothing.
//!
//! Pure Rust (gitoxide): no libgit2, and no `git` program is run.
//!
//! - `git://` goes through gix's blocking client over a TCP connection made here, with a
//!   connect timeout and a read/write timeout on the socket, into a bare cache repository
//!   (one per URL, named by a hash of the URL, under the cache folder).
//! - `ssh://` goes through gix's ssh transport (it runs the `ssh` program) into the same cache.
//! - `file://` is read in place: the repository on this machine is opened with gix and its
//!   objects are read directly. (gix's own `file://` transport would run `git-upload-pack`; a
//!   local repository needs no copy, so none is made, and the cache is not used for it.)
//! - `http://` and `https://` are parsed but not fetched: this build has no HTTP transport.
//!
//! Everything is read from git objects (the tree at the commit), never from a checkout.

mod error;
mod limits;
mod refs;
mod remote;
mod spec;
#[cfg(test)]
mod tests;
mod tree;

pub use error::GitError;
pub use limits::GitLimits;
pub use spec::{GitSource, MAX_SPEC_BYTES};
pub use tree::{Fetched, FetchedFile, FetchedSkill};

use error::chain;
use gix::bstr::ByteSlice;
use refs::{local_refs, resolve};
use remote::Timeouts;
use spec::shown;
use std::path::Path;
use tree::read_skills;

/// Clone or fetch `src` into a cache under `cache_dir` (a bare repository per URL, keyed by a
/// hash of the URL), resolve `reference` (a branch, a tag — annotated tags peeled — or a full or
/// abbreviated commit id; default: the remote HEAD) to a commit, and read the skills of the tree
/// at `subdir` (or the root): every folder containing a `SKILL.md` (a folder whose own SKILL.md
/// makes it a skill is not searched further for nested skills; `.git` is never entered).
///
/// - `file://` repositories are read in place (no copy in the cache, no `git-upload-pack`).
/// - `git://`: connect timeout 10 s, then each read or write on the socket times out after
///   60 s; `ssh://` relies on ssh's own settings. Either way the whole fetch is interrupted
///   after 10 minutes (gix checks its interrupt flag while it receives and indexes the pack).
/// - The "archive" size held to [`GitLimits::archive_bytes`] is, over the network, the cache
///   repository's packed size (the files of `objects/pack`, watched while the pack is received,
///   so an oversized download is stopped early, and measured again after; a copy over the limit
///   is removed), and for every scheme the total size of the blobs in the tree at `subdir`.
/// - Reference resolution: `HEAD`, a full name (`refs/...`), a branch, a tag (a name that is both
///   a branch and a tag on different commits is refused as ambiguous), then a commit id (4 to 40
///   hex digits) present in the repository.
///
/// All or nothing: a complete [`Fetched`] or an error.
pub fn fetch(src: &GitSource, limits: &GitLimits, cache_dir: &Path) -> Result<Fetched, GitError> {
    fetch_with(src, limits, cache_dir, &Timeouts::default())
}

/// [`fetch`] with its network time limits given.
fn fetch_with(
    src: &GitSource,
    limits: &GitLimits,
    cache_dir: &Path,
    timeouts: &Timeouts,
) -> Result<Fetched, GitError> {
    let url = &src.url;
    let parsed = gix::url::parse(url.as_bytes().as_bstr()).map_err(|e| GitError::Spec {
        spec: shown(&src.to_spec()),
        problem: format!("the URL is not valid ({e})"),
    })?;
    match src.scheme() {
        "file" => {
            let path = gix::path::from_bstr(parsed.path.as_bstr())
                .map_err(|e| GitError::Unreachable {
                    url: url.clone(),
                    detail: format!("its path is not usable here ({})", chain(&e)),
                })?
                .into_owned();
            let repo = open_local(&path).map_err(|detail| GitError::Unreachable {
                url: url.clone(),
                detail,
            })?;
            let refs = local_refs(&repo, url)?;
            let commit = resolve(&repo, &refs, src)?;
            read_skills(&repo, commit, src, limits)
        }
        "git" | "ssh" => {
            let (repo, refs, _lock) =
                remote::fetch_into_cache(&parsed, src, limits.archive_bytes, cache_dir, timeouts)?;
            let commit = resolve(&repo, &refs, src)?;
            read_skills(&repo, commit, src, limits)
        }
        other => Err(GitError::UnsupportedTransport {
            url: url.clone(),
            scheme: other.to_string(),
        }),
    }
}

/// A repository on this machine, opened in place, without its configuration.
fn open_local(path: &Path) -> Result<gix::Repository, String> {
    if !path.exists() {
        return Err(format!("{} does not exist", path.display()));
    }
    gix::open_opts(path, gix::open::Options::isolated())
        .map_err(|e| format!("{} is not a git repository ({})", path.display(), chain(&e)))
}
