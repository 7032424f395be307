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
//! - `https://` (and `http://` to a loopback address only: plain HTTP elsewhere would carry the
//!   repository and any credentials in the clear) goes through gix's HTTP client (reqwest,
//!   rustls) into the same cache. A password in the URL (`https://user:password@host/...`) is
//!   used for that fetch only, and sent over https only: it is taken out of [`GitSource::url`]
//!   when parsed, and every error is scrubbed of it. No credential helper runs, nothing prompts.
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
pub(crate) use spec::shown;
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
    open_with(src, limits, cache_dir, timeouts)?.read(src.subdir.as_deref(), limits)
}

/// A repository fetched (or opened in place) with its reference resolved to a commit: what
/// [`open`] gives, to read one folder or file of that commit after another without fetching
/// again. Holds the cache's lock until dropped.
pub(crate) struct Opened {
    repo: gix::Repository,
    commit: gix::ObjectId,
    src: GitSource,
    _lock: Option<std::fs::File>,
}

/// [`fetch`] without reading: the repository and the commit `src` names.
pub(crate) fn open(
    src: &GitSource,
    limits: &GitLimits,
    cache_dir: &Path,
) -> Result<Opened, GitError> {
    open_with(src, limits, cache_dir, &Timeouts::default())
}

impl Opened {
    /// The commit, 40 lowercase hex digits.
    pub(crate) fn commit(&self) -> String {
        self.commit.to_string()
    }

    /// The skills of the commit's tree at `subdir` (the root when `None`), as [`fetch`].
    pub(crate) fn read(
        &self,
        subdir: Option<&str>,
        limits: &GitLimits,
    ) -> Result<Fetched, GitError> {
        let src = self
            .src
            .at(self.src.reference.clone(), subdir.map(str::to_string));
        read_skills(&self.repo, self.commit, &src, limits).map_err(|e| self.scrub(e))
    }

    /// The file at `path` (from the repository's root) of the commit, when it is a plain file of
    /// at most `max_bytes` (over it: a [`GitError::Limit`]); `None` when there is none.
    pub(crate) fn read_file(
        &self,
        path: &str,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, GitError> {
        tree::read_file(&self.repo, self.commit, &self.src.url, path, max_bytes)
            .map_err(|e| self.scrub(e))
    }

    fn scrub(&self, e: GitError) -> GitError {
        match &self.src.password {
            Some(p) => e.scrubbed(&p.0),
            None => e,
        }
    }
}

fn open_with(
    src: &GitSource,
    limits: &GitLimits,
    cache_dir: &Path,
    timeouts: &Timeouts,
) -> Result<Opened, GitError> {
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
            Ok(Opened {
                repo,
                commit,
                src: src.clone(),
                _lock: None,
            })
        }
        "git" | "ssh" | "https" | "http" => {
            if src.scheme() == "http" && !is_loopback(&parsed) {
                return Err(GitError::InsecureHttp { url: url.clone() });
            }
            let mut parsed = parsed;
            if let Some(p) = &src.password {
                parsed.set_password(Some(p.0.clone()));
            }
            let opened =
                remote::fetch_into_cache(&parsed, src, limits.archive_bytes, cache_dir, timeouts)
                    .and_then(|(repo, refs, lock)| {
                        let commit = resolve(&repo, &refs, src)?;
                        Ok(Opened {
                            repo,
                            commit,
                            src: src.clone(),
                            _lock: Some(lock),
                        })
                    });
            match &src.password {
                Some(p) => opened.map_err(|e| e.scrubbed(&p.0)),
                None => opened,
            }
        }
        other => Err(GitError::UnsupportedTransport {
            url: url.clone(),
            scheme: other.to_string(),
        }),
    }
}

/// Whether the URL's host is this machine (`localhost`, 127.0.0.0/8, `::1`).
fn is_loopback(url: &gix::Url) -> bool {
    match url.host_unbracketed() {
        Some("localhost") => true,
        Some(h) => h
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
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
