//! Git sources for `skillbase import git+URL[@ref][#subdir]` (supply chain): parsing the spec,
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

use std::fmt;
use std::fs;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::objs::tree::EntryKind;

/// Longest spec accepted, in bytes.
pub const MAX_SPEC_BYTES: usize = 2048;

/// Most tree entries (files and folders) looked at under the selected folder: a guard against
/// pathological trees (many empty files pass the byte limits), not one of [`GitLimits`].
const MAX_TREE_ENTRIES: usize = 100_000;

/// The URL schemes a spec may use.
const SCHEMES: [&str; 5] = ["file", "git", "ssh", "https", "http"];

/// A git source as written on the command line: `git+URL[@ref][#subdir]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// The repository's URL (`file://`, `git://`, `ssh://`, `https://` or `http://`).
    pub url: String,
    /// A branch, a tag, a full reference name (`refs/...`) or a full or abbreviated commit id;
    /// `None`: the remote's HEAD.
    pub reference: Option<String>,
    /// A folder inside the repository ('/'-separated, relative, no trailing '/'); `None`: the root.
    pub subdir: Option<String>,
}

impl GitSource {
    /// Parse `git+URL[@ref][#subdir]`.
    ///
    /// `#subdir` is what follows the last `#`; `@ref` is what follows the last `@` in the URL's
    /// path (after the host), so `git+ssh://git@host/repo.git@v1` has the ref `v1`,
    /// `git+ssh://git@host/repo.git` none, and a ref may hold '/' (`@feature/x`).
    pub fn parse(spec: &str) -> Result<GitSource, GitError> {
        let bad = |problem: String| GitError::Spec {
            spec: shown(spec),
            problem,
        };
        if spec.len() > MAX_SPEC_BYTES {
            return Err(bad(format!(
                "it is {} bytes long, over the limit of {MAX_SPEC_BYTES} bytes; write a shorter URL \
                 or folder",
                spec.len()
            )));
        }
        if let Some(c) = spec.chars().find(|c| c.is_control() || c.is_whitespace()) {
            return Err(bad(format!(
                "it contains {}; write the spec without spaces or control characters \
                 (percent-encode them in the URL, e.g. %20)",
                describe_char(c)
            )));
        }
        let Some(rest) = spec.strip_prefix("git+") else {
            return Err(bad(
                "a git source starts with `git+`; write git+URL[@ref][#subdir], e.g. \
                 git+https://example.com/skills.git@v1#skills/pdf"
                    .into(),
            ));
        };
        let (url_ref, subdir) = match rest.rfind('#') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let subdir = match subdir {
            Some(s) => Some(check_subdir(s).map_err(bad)?),
            None => None,
        };
        let Some(sep) = url_ref.find("://") else {
            return Err(bad(format!(
                "the URL has no scheme; write one of {} (for scp-like `git@host:repo`, write \
                 `ssh://git@host/repo`)",
                scheme_list()
            )));
        };
        let scheme = &url_ref[..sep];
        if !SCHEMES.contains(&scheme) {
            return Err(bad(format!(
                "the URL scheme `{scheme}` is not supported; write one of {}",
                scheme_list()
            )));
        }
        let after_scheme = sep + 3;
        let Some(path_start) = url_ref[after_scheme..].find('/').map(|i| i + after_scheme) else {
            return Err(bad(format!(
                "the URL has no repository path; write {scheme}://HOST/PATH/TO/REPO{}",
                if scheme == "file" {
                    " (file:///absolute/path)"
                } else {
                    ""
                }
            )));
        };
        let (url, reference) = match url_ref[path_start..].rfind('@') {
            Some(i) => {
                let at = path_start + i;
                (&url_ref[..at], Some(&url_ref[at + 1..]))
            }
            None => (url_ref, None),
        };
        let host = &url[after_scheme..path_start];
        if scheme == "file" && !host.is_empty() {
            return Err(bad(format!(
                "a file URL names no host (`{host}` found); write file:///absolute/path/to/repo"
            )));
        }
        if scheme != "file" && host.rsplit('@').next().unwrap_or("").is_empty() {
            return Err(bad(format!(
                "the URL has no host; write {scheme}://HOST/PATH/TO/REPO"
            )));
        }
        if url[path_start..].trim_matches('/').is_empty() {
            return Err(bad(format!(
                "the URL has no repository path after the host; write {scheme}://{host}/PATH/TO/REPO"
            )));
        }
        if let Err(e) = gix::url::parse(url.as_bytes().as_bstr()) {
            return Err(bad(format!(
                "the URL `{url}` is not valid ({e}); write {scheme}://HOST/PATH/TO/REPO"
            )));
        }
        let reference = match reference {
            Some(r) => Some(check_reference(r).map_err(bad)?),
            None => None,
        };
        Ok(GitSource {
            url: url.to_string(),
            reference,
            subdir,
        })
    }

    /// The canonical text (what a lockfile records), `git+URL[@ref][#subdir]`.
    pub fn to_spec(&self) -> String {
        let mut s = format!("git+{}", self.url);
        if let Some(r) = &self.reference {
            s.push('@');
            s.push_str(r);
        }
        if let Some(d) = &self.subdir {
            s.push('#');
            s.push_str(d);
        }
        s
    }

    fn scheme(&self) -> &str {
        self.url.split("://").next().unwrap_or("")
    }
}

impl fmt::Display for GitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_spec())
    }
}

/// The spec as shown in an error: escaped, and cut when long.
fn shown(spec: &str) -> String {
    let mut cut: String = spec.chars().take(120).collect();
    if cut.len() < spec.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

fn describe_char(c: char) -> String {
    if c == ' ' {
        "a space".into()
    } else if c.is_whitespace() {
        format!("whitespace ({})", c.escape_unicode())
    } else {
        format!("a control character ({})", c.escape_default())
    }
}

fn scheme_list() -> String {
    SCHEMES.map(|s| format!("{s}://")).join(", ")
}

/// A `#subdir`: relative, '/'-separated, no `..`, `.`, empty parts, backslashes or `.git`.
/// One trailing '/' is dropped.
fn check_subdir(s: &str) -> Result<String, String> {
    let fix = "write a folder relative to the repository's root, e.g. #skills/pdf";
    if s.is_empty() {
        return Err(format!(
            "the folder after `#` is empty; {fix}, or drop the `#`"
        ));
    }
    if s.starts_with('/') {
        return Err(format!("the folder `{s}` starts with `/`; {fix}"));
    }
    if s.contains('\\') {
        return Err(format!(
            "the folder `{s}` contains a backslash; write `/` between folders, e.g. #skills/pdf"
        ));
    }
    let s = s.strip_suffix('/').unwrap_or(s);
    for part in s.split('/') {
        match part {
            "" => return Err(format!("the folder `{s}` has an empty part (`//`); {fix}")),
            "." | ".." => {
                return Err(format!(
                    "the folder `{s}` contains `{part}`; {fix} (no `.` or `..` parts)"
                ));
            }
            ".git" => return Err(format!("the folder `{s}` goes into `.git`; {fix}")),
            _ => {}
        }
    }
    Ok(s.to_string())
}

/// An `@ref`: a valid (partial) git reference name or commit id.
fn check_reference(r: &str) -> Result<String, String> {
    let fix = "write a branch, a tag or a commit id after `@`, e.g. @main, @v1.2.0 or @3f2a9c1";
    if r.is_empty() {
        return Err(format!(
            "the reference after `@` is empty; {fix}, or drop the `@`"
        ));
    }
    if r.starts_with('-') {
        return Err(format!("the reference `{r}` starts with `-`; {fix}"));
    }
    if let Err(e) = gix::validate::reference::name_partial(r.as_bytes().as_bstr()) {
        return Err(format!("`{r}` is not a valid git reference ({e}); {fix}"));
    }
    Ok(r.to_string())
}

/// Limits of one import from git (AgentArea's defaults), configurable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitLimits {
    /// Largest repository: both the packed size of the cache repository after a network fetch
    /// (the `.pack` files' total) and the total size of the files (blobs) in the tree at
    /// `#subdir` (the only measure for `file://`, read in place) are held to it. 25 MiB.
    pub archive_bytes: u64,
    /// Most files in one skill. 200.
    pub files_per_skill: usize,
    /// Most bytes of files in one skill. 10 MiB.
    pub bytes_per_skill: u64,
    /// Most `SKILL.md` files found in the tree at `#subdir`, nested ones included. 50.
    pub skill_md_candidates: usize,
    /// Most skills in one import. 10.
    pub skills_per_import: usize,
}

impl Default for GitLimits {
    fn default() -> Self {
        GitLimits {
            archive_bytes: 25 * 1024 * 1024,
            files_per_skill: 200,
            bytes_per_skill: 10 * 1024 * 1024,
            skill_md_candidates: 50,
            skills_per_import: 10,
        }
    }
}

/// One skill read from the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedSkill {
    /// Path of the skill folder inside the repository ('/'-separated, from the repository's
    /// root even under `#subdir`), "" for the root.
    pub dir: String,
    /// The skill's files, sorted by path.
    pub files: Vec<FetchedFile>,
}

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedFile {
    /// Relative to the skill folder, '/'-separated.
    pub path: String,
    pub bytes: Vec<u8>,
    /// Mode 100755 in the tree.
    pub executable: bool,
}

/// What one fetch read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The commit read, 40 lowercase hex digits.
    pub commit: String,
    /// The skills, sorted by `dir`.
    pub skills: Vec<FetchedSkill>,
}

/// Why a git source could not be read. Each message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The spec is malformed.
    #[error("invalid git source {spec}: {problem}")]
    Spec { spec: String, problem: String },
    /// The URL's scheme is parsed but cannot be fetched by this build.
    #[error(
        "cannot fetch {url}: {scheme}:// is not supported in this build (no HTTP transport is \
         compiled in, so nothing is downloaded from the web); use a git:// or ssh:// URL, or \
         clone the repository yourself and use git+file:///path/to/clone"
    )]
    UnsupportedTransport { url: String, scheme: String },
    /// The repository could not be reached or read.
    #[error(
        "cannot reach the git repository {url}: {detail}; check the URL, that the repository \
         exists and that the server is running"
    )]
    Unreachable { url: String, detail: String },
    /// The cache folder could not be used.
    #[error(
        "cannot use the git cache at {}: {detail}; check that the folder is writable, or remove \
         it to start afresh",
        path.display()
    )]
    Cache { path: PathBuf, detail: String },
    /// The reference names nothing in the repository.
    #[error(
        "the reference `{reference}` is not in {url}: it names no branch, tag or commit there. \
         {available}"
    )]
    RefNotFound {
        reference: String,
        url: String,
        available: String,
    },
    /// The reference names more than one thing.
    #[error("the reference `{reference}` is ambiguous in {url}: {detail}")]
    AmbiguousRef {
        reference: String,
        url: String,
        detail: String,
    },
    /// The repository has no HEAD to default to.
    #[error(
        "{url} has no HEAD (an empty repository, or HEAD names a missing branch): name a branch, \
         tag or commit with @REF. {available}"
    )]
    NoHead { url: String, available: String },
    /// The reference resolved to something that is not a commit.
    #[error(
        "the reference `{reference}` in {url} names {what}, not a commit: name a commit, a branch or a tag"
    )]
    NotACommit {
        reference: String,
        url: String,
        what: String,
    },
    /// `#subdir` is missing at the commit, or is not a folder.
    #[error(
        "the folder `{subdir}` is not in {url} at commit {commit} ({detail}); fix #subdir to a \
         folder of that commit"
    )]
    SubdirNotFound {
        subdir: String,
        url: String,
        commit: String,
        detail: String,
    },
    /// A limit of [`GitLimits`] was passed.
    #[error("{subject}: {found} {unit}, over the limit of {max} {unit} {scope} ({limit}); {fix}")]
    Limit {
        /// The limit's field name in [`GitLimits`] (or a built-in guard's name).
        limit: &'static str,
        subject: String,
        found: u64,
        max: u64,
        unit: &'static str,
        scope: &'static str,
        fix: &'static str,
    },
    /// A skill holds an entry that is not a plain file (a symlink, a submodule, a bad name).
    #[error("{path}: {what} inside a skill folder is refused, and with it the whole import; {fix}")]
    UnsafeEntry {
        path: String,
        what: &'static str,
        fix: &'static str,
    },
    /// No folder with a SKILL.md was found.
    #[error(
        "no skill found in {url} at commit {commit}{where_}: no folder has a SKILL.md; point \
         #subdir at a folder holding a SKILL.md, or pick another @ref"
    )]
    NoSkill {
        url: String,
        commit: String,
        where_: String,
    },
    /// Reading the repository's objects failed (a damaged repository or cache).
    #[error("cannot read {url}: {detail}; if the cache is damaged, remove it and try again")]
    Read { url: String, detail: String },
}

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

/// Network time limits (fixed in [`fetch`]; shorter in tests).
#[derive(Debug, Clone, Copy)]
struct Timeouts {
    connect: Duration,
    io: Duration,
    overall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            io: Duration::from_secs(60),
            overall: Duration::from_secs(600),
        }
    }
}

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
            let (repo, repo_path, _lock) = open_cache(cache_dir, url)?;
            // Over the limit, the cached copy is removed: it is not kept, nor read next time.
            let over = |found: u64| {
                let _ = fs::remove_dir_all(&repo_path);
                GitError::Limit {
                    limit: "archive_bytes",
                    subject: url.clone(),
                    found,
                    max: limits.archive_bytes,
                    unit: "bytes packed",
                    scope: "per repository",
                    fix: "import from a smaller repository (the cached copy was removed)",
                }
            };
            let refs = match network_fetch(&repo, &parsed, src, limits.archive_bytes, timeouts) {
                Ok(refs) => refs,
                Err(FetchFailure::TooBig(found)) => return Err(over(found)),
                Err(FetchFailure::Error(e)) => return Err(e),
            };
            let packed = dir_bytes(&repo_path.join("objects").join("pack")).map_err(|e| {
                GitError::Cache {
                    path: repo_path.clone(),
                    detail: format!("cannot measure its packs: {e}"),
                }
            })?;
            if packed > limits.archive_bytes {
                return Err(over(packed));
            }
            let commit = resolve(&repo, &refs, src)?;
            read_skills(&repo, commit, src, limits)
        }
        other => Err(GitError::UnsupportedTransport {
            url: url.clone(),
            scheme: other.to_string(),
        }),
    }
}

/// A gix error with its causes, on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = err.source();
    }
    parts.join(": ")
}

fn open_local(path: &Path) -> Result<gix::Repository, String> {
    if !path.exists() {
        return Err(format!("{} does not exist", path.display()));
    }
    gix::open_opts(path, gix::open::Options::isolated())
        .map_err(|e| format!("{} is not a git repository ({})", path.display(), chain(&e)))
}

/// The branches and tags of a repository and its HEAD, each with the object it peels to.
struct Refs {
    head: Option<ObjectId>,
    /// Full names (`refs/heads/..`, `refs/tags/..`, other `refs/..`) and peeled ids.
    names: Vec<(String, ObjectId)>,
}

impl Refs {
    fn find(&self, full: &str) -> Option<ObjectId> {
        self.names
            .iter()
            .find(|(n, _)| n == full)
            .map(|(_, id)| *id)
    }

    /// Up to 10 branches and tags, for an error message.
    fn available(&self) -> String {
        let pick = |prefix: &str| -> Vec<&str> {
            self.names
                .iter()
                .filter_map(|(n, _)| n.strip_prefix(prefix))
                .collect()
        };
        let branches = pick("refs/heads/");
        let tags = pick("refs/tags/");
        if branches.is_empty() && tags.is_empty() {
            return "It has no branches or tags.".into();
        }
        let total = branches.len() + tags.len();
        let shown_branches: Vec<&str> = branches.iter().take(10).copied().collect();
        let shown_tags: Vec<&str> = tags
            .iter()
            .take(10 - shown_branches.len())
            .copied()
            .collect();
        let mut parts = Vec::new();
        if !shown_branches.is_empty() {
            parts.push(format!("branches: {}", shown_branches.join(", ")));
        }
        if !shown_tags.is_empty() {
            parts.push(format!("tags: {}", shown_tags.join(", ")));
        }
        let more = if total > 10 {
            format!(" (and {} more)", total - 10)
        } else {
            String::new()
        };
        format!("It has {}{more}.", parts.join("; "))
    }
}

fn read_error(url: &str, what: &str, e: &(dyn std::error::Error + 'static)) -> GitError {
    GitError::Read {
        url: url.to_string(),
        detail: format!("{what}: {}", chain(e)),
    }
}

fn local_refs(repo: &gix::Repository, url: &str) -> Result<Refs, GitError> {
    let head = repo.head_id().ok().map(|id| id.detach());
    let platform = repo
        .references()
        .map_err(|e| read_error(url, "cannot list references", &e))?;
    let iter = platform
        .all()
        .map_err(|e| read_error(url, "cannot list references", &e))?;
    let mut names = Vec::new();
    for r in iter {
        let Ok(mut r) = r else { continue };
        let name = r.name().as_bstr().to_string();
        if !name.starts_with("refs/") {
            continue;
        }
        if let Ok(id) = r.peel_to_id() {
            names.push((name, id.detach()));
        }
    }
    names.sort();
    Ok(Refs { head, names })
}

/// The commit `src.reference` names in `repo`, peeled from a tag if need be.
fn resolve(repo: &gix::Repository, refs: &Refs, src: &GitSource) -> Result<ObjectId, GitError> {
    let url = &src.url;
    let (reference, target) = match src.reference.as_deref() {
        None | Some("HEAD") => {
            let Some(head) = refs.head else {
                return Err(GitError::NoHead {
                    url: url.clone(),
                    available: refs.available(),
                });
            };
            ("HEAD", head)
        }
        Some(r) => (r, find_reference(repo, refs, src, r)?),
    };
    let object = repo
        .find_object(target)
        .map_err(|e| GitError::RefNotFound {
            reference: reference.to_string(),
            url: url.clone(),
            available: format!("({}) {}", chain(&e), refs.available()),
        })?;
    let kind = object.kind;
    match object.peel_to_kind(gix::object::Kind::Commit) {
        Ok(commit) => Ok(commit.id),
        Err(_) => Err(GitError::NotACommit {
            reference: reference.to_string(),
            url: url.clone(),
            what: format!("a {kind} ({target})"),
        }),
    }
}

fn find_reference(
    repo: &gix::Repository,
    refs: &Refs,
    src: &GitSource,
    r: &str,
) -> Result<ObjectId, GitError> {
    let url = &src.url;
    if r.starts_with("refs/") {
        if let Some(id) = refs.find(r) {
            return Ok(id);
        }
    } else {
        let branch = refs.find(&format!("refs/heads/{r}"));
        let tag = refs.find(&format!("refs/tags/{r}"));
        match (branch, tag) {
            (Some(b), Some(t)) if b != t => {
                return Err(GitError::AmbiguousRef {
                    reference: r.to_string(),
                    url: url.clone(),
                    detail: format!(
                        "both a branch ({b}) and a tag ({t}); write @refs/heads/{r} or \
                         @refs/tags/{r}"
                    ),
                });
            }
            (Some(id), _) | (None, Some(id)) => return Ok(id),
            (None, None) => {}
        }
    }
    let is_hex = (4..=40).contains(&r.len()) && r.bytes().all(|b| b.is_ascii_hexdigit());
    if is_hex {
        let hex = r.to_ascii_lowercase();
        if hex.len() == 40 {
            if let Ok(id) = ObjectId::from_hex(hex.as_bytes())
                && repo.has_object(id)
            {
                return Ok(id);
            }
        } else if let Ok(prefix) = gix::hash::Prefix::from_hex(&hex) {
            match repo.objects.lookup_prefix(prefix, None) {
                Ok(Some(Ok(id))) => return Ok(id),
                Ok(Some(Err(()))) => {
                    return Err(GitError::AmbiguousRef {
                        reference: r.to_string(),
                        url: url.clone(),
                        detail: "more than one object starts with these digits; write more of \
                                 the commit id (or all 40 digits)"
                            .into(),
                    });
                }
                Ok(None) => {}
                Err(e) => return Err(read_error(url, "cannot look up the commit id", &e)),
            }
        }
    }
    // In place every object of the repository is looked at; over the network only what the
    // branches and tags reach is fetched.
    let reach = if src.scheme() == "file" {
        ""
    } else {
        " A commit id must be reachable from one of them."
    };
    Err(GitError::RefNotFound {
        reference: r.to_string(),
        url: url.clone(),
        available: format!("{}{reach}", refs.available()),
    })
}

/// The cache repository for `url`, opened (created if missing or unusable), with the lock that
/// keeps other imports of the same URL out while this one fetches and reads.
fn open_cache(
    cache_dir: &Path,
    url: &str,
) -> Result<(gix::Repository, PathBuf, fs::File), GitError> {
    let cache_err = |path: &Path, what: &str, e: &dyn fmt::Display| GitError::Cache {
        path: path.to_path_buf(),
        detail: format!("{what}: {e}"),
    };
    fs::create_dir_all(cache_dir)
        .map_err(|e| cache_err(cache_dir, "cannot create the folder", &e))?;
    let key = gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, url.as_bytes())
        .map_err(|e| cache_err(cache_dir, "cannot hash the URL", &e))?;
    let repo_path = cache_dir.join(format!("{key}.git"));
    let lock_path = cache_dir.join(format!("{key}.lock"));
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| cache_err(&lock_path, "cannot open the lock file", &e))?;
    // An OS lock: released when the process ends, however it ends.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match lock.try_lock() {
            Ok(()) => break,
            Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(cache_err(
                    &lock_path,
                    "another import of the same URL has held the lock for 2 minutes",
                    &"wait for it to finish",
                ));
            }
            Err(fs::TryLockError::Error(e)) => {
                return Err(cache_err(&lock_path, "cannot lock", &e));
            }
        }
    }
    if repo_path.exists() {
        match gix::open_opts(&repo_path, gix::open::Options::isolated()) {
            Ok(repo) if repo.is_bare() => return Ok((repo, repo_path, lock)),
            // Not a usable bare repository (an interrupted creation, a damaged copy): start over.
            _ => fs::remove_dir_all(&repo_path)
                .map_err(|e| cache_err(&repo_path, "cannot remove the damaged copy", &e))?,
        }
    }
    let tmp = cache_dir.join(format!(".{key}.tmp-{}", std::process::id()));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(|e| cache_err(&tmp, "cannot remove", &e))?;
    }
    gix::create::into(
        &tmp,
        gix::create::Kind::Bare,
        gix::create::Options::default(),
    )
    .map_err(|e| cache_err(&tmp, "cannot create a bare repository", &chain(&e)))?;
    fs::rename(&tmp, &repo_path)
        .map_err(|e| cache_err(&repo_path, "cannot move into place", &e))?;
    let repo = gix::open_opts(&repo_path, gix::open::Options::isolated())
        .map_err(|e| cache_err(&repo_path, "cannot open", &chain(&e)))?;
    Ok((repo, repo_path, lock))
}

/// Total size of the files in a folder (not recursive): for `objects/pack`, the packs, their
/// indexes and a pack being received (gix writes it there as a temporary file).
fn dir_bytes(dir: &Path) -> io::Result<u64> {
    let mut total = 0;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let Ok(meta) = entry?.metadata() else {
            continue; // a temporary file removed meanwhile
        };
        if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}

/// How a network fetch failed.
enum FetchFailure {
    /// The cache's pack folder grew past the archive limit while receiving (bytes seen).
    TooBig(u64),
    Error(GitError),
}

/// Fetch every branch and tag of the remote into the bare cache `repo` (branches to
/// `refs/heads/*`, tags to `refs/tags/*`, forced) and return what the remote advertised.
///
/// A watchdog interrupts the fetch (gix checks the flag on every read of the pack stream) when
/// the overall deadline passes or when the cache's pack folder grows past `archive_bytes`, so
/// an oversized repository is not downloaded whole.
fn network_fetch(
    repo: &gix::Repository,
    url: &gix::Url,
    src: &GitSource,
    archive_bytes: u64,
    timeouts: &Timeouts,
) -> Result<Refs, FetchFailure> {
    use gix::remote::Direction;
    let unreachable = |detail: String| GitError::Unreachable {
        url: src.url.clone(),
        detail,
    };
    let remote = repo
        .remote_at_without_url_rewrite(url.clone())
        .and_then(|r| {
            r.with_refspecs(
                ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
                Direction::Fetch,
            )
        })
        .map_err(|e| FetchFailure::Error(unreachable(chain(&e))))?
        .with_fetch_tags(gix::remote::fetch::Tags::None);

    let interrupt = Arc::new(AtomicBool::new(false));
    let pack_dir = repo.git_dir().join("objects").join("pack");
    let watchdog = Watchdog::start(
        Arc::clone(&interrupt),
        pack_dir,
        archive_bytes,
        timeouts.overall,
    );
    let outcome = match src.scheme() {
        "git" => connect_git(url, timeouts)
            .map_err(unreachable)
            .and_then(|t| {
                run_fetch(remote.to_connection_with_transport(t), &interrupt)
                    .map_err(|e| unreachable(chain(&e)))
            }),
        _ => remote
            .connect(Direction::Fetch)
            .and_then(|con| run_fetch(con, &interrupt))
            .map_err(|e| unreachable(chain(&e))),
    };
    if let Some(n) = watchdog.stop() {
        return Err(FetchFailure::TooBig(n));
    }
    let outcome = outcome.map_err(|e| {
        FetchFailure::Error(if interrupt.load(Ordering::SeqCst) {
            unreachable(format!(
                "the fetch took longer than {} s and was stopped",
                timeouts.overall.as_secs()
            ))
        } else {
            e
        })
    })?;
    Ok(advertised_refs(&outcome.ref_map.remote_refs))
}

/// The thread that interrupts a network fetch: it sets the flag when the overall deadline
/// passes or when the pack folder grows past the archive limit.
struct Watchdog {
    /// Dropped to tell the thread to stop.
    stop: mpsc::Sender<()>,
    /// The bytes the pack folder held when the thread stopped the fetch for its size.
    thread: std::thread::JoinHandle<Option<u64>>,
}

impl Watchdog {
    /// Start watching `pack_dir` against `archive_bytes` and the `overall` deadline.
    fn start(
        flag: Arc<AtomicBool>,
        pack_dir: PathBuf,
        archive_bytes: u64,
        overall: Duration,
    ) -> Watchdog {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || -> Option<u64> {
            let start = Instant::now();
            // Until told to stop (or the sender is gone), look every 20 ms.
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_millis(20))
            {
                if start.elapsed() >= overall {
                    flag.store(true, Ordering::SeqCst);
                    return None;
                }
                if let Ok(n) = dir_bytes(&pack_dir)
                    && n > archive_bytes
                {
                    flag.store(true, Ordering::SeqCst);
                    return Some(n);
                }
            }
            None
        });
        Watchdog { stop, thread }
    }

    /// Stop the thread, once the fetch is over: the pack folder's bytes if it was too big.
    fn stop(self) -> Option<u64> {
        drop(self.stop);
        self.thread.join().unwrap_or(None)
    }
}

/// The refs a remote advertised: its HEAD and its `refs/...` names (sorted), unborn ones left
/// out.
fn advertised_refs(remote_refs: &[gix::protocol::handshake::Ref]) -> Refs {
    use gix::protocol::handshake::Ref;
    let mut head = None;
    let mut names = Vec::new();
    for r in remote_refs {
        let (name, id) = match r {
            Ref::Peeled {
                full_ref_name,
                object,
                ..
            }
            | Ref::Direct {
                full_ref_name,
                object,
            }
            | Ref::Symbolic {
                full_ref_name,
                object,
                ..
            } => (full_ref_name, *object),
            Ref::Unborn { .. } => continue,
        };
        let name = name.to_string();
        if name == "HEAD" {
            head = Some(id);
        } else if name.starts_with("refs/") {
            names.push((name, id));
        }
    }
    names.sort();
    Refs { head, names }
}

fn run_fetch<T>(
    con: gix::remote::Connection<'_, '_, '_, T>,
    interrupt: &AtomicBool,
) -> gix::Result<gix::remote::fetch::Outcome>
where
    T: gix::protocol::transport::client::blocking_io::Transport,
{
    let options = gix::remote::ref_map::Options {
        // List every ref (HEAD included), not only those the refspecs name.
        prefix_from_spec_as_filter_on_remote: false,
        ..Default::default()
    };
    con.prepare_fetch(gix::progress::Discard, options)?
        .receive(gix::progress::Discard, interrupt)
}

/// A `git://` connection with a connect timeout and socket read/write timeouts.
fn connect_git(
    url: &gix::Url,
    timeouts: &Timeouts,
) -> Result<
    gix::protocol::transport::client::git::blocking_io::Connection<TcpStream, TcpStream>,
    String,
> {
    let host = url
        .host_unbracketed()
        .ok_or_else(|| "the URL has no host".to_string())?;
    let port = url.port.unwrap_or(9418);
    let addrs: Vec<_> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .collect();
    let mut last = format!("{host} resolved to no address");
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeouts.connect) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("cannot connect to {addr}: {e}"),
        }
    }
    let stream = stream.ok_or(last)?;
    let setup = |s: &TcpStream| -> io::Result<()> {
        s.set_read_timeout(Some(timeouts.io))?;
        s.set_write_timeout(Some(timeouts.io))?;
        s.set_nodelay(true)
    };
    setup(&stream).map_err(|e| format!("cannot set up the connection: {e}"))?;
    let write = stream
        .try_clone()
        .map_err(|e| format!("cannot set up the connection: {e}"))?;
    let virtual_host = url.host().map(|h| (h.to_string(), url.port));
    Ok(
        gix::protocol::transport::client::git::blocking_io::Connection::new(
            stream,
            write,
            gix::protocol::transport::Protocol::V2,
            url.path.clone(),
            virtual_host,
            gix::protocol::transport::client::git::ConnectMode::Daemon,
            false,
        )
        .custom_url(Some(url.to_bstring())),
    )
}

/// Whether a file name marks a skill folder (as the format crate: `SKILL.md` or `skill.md`).
fn is_skill_md(name: &str) -> bool {
    name == "SKILL.md" || name == "skill.md"
}

/// A skill found in the walk, before its files are read.
struct SkillDraft {
    dir: String,
    files: Vec<(String, ObjectId, bool, u64)>,
    unsafe_entries: Vec<(String, &'static str, &'static str)>,
}

/// Join repository-relative path parts.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn skill_label(dir: &str) -> String {
    if dir.is_empty() {
        "the skill at the repository's root".into()
    } else {
        dir.to_string()
    }
}

/// Read the skills of `commit`'s tree at `src.subdir`, checking the limits before any file is
/// read.
fn read_skills(
    repo: &gix::Repository,
    commit: ObjectId,
    src: &GitSource,
    limits: &GitLimits,
) -> Result<Fetched, GitError> {
    let url = src.url.as_str();
    let root = repo
        .find_commit(commit)
        .map_err(|e| read_error(url, "cannot read the commit", &e))?
        .tree_id()
        .map_err(|e| read_error(url, "cannot read the commit's tree", &e))?
        .detach();
    let (base, base_path) = descend(repo, root, src, commit)?;
    let mut walk = walk_tree(repo, base, base_path, url)?;
    check_import(&walk, src, commit, limits)?;
    check_skills(&mut walk.skills, limits)?;
    // Only now are the files read.
    let skills = read_files(repo, walk.skills, url)?;
    Ok(Fetched {
        commit: commit.to_string(),
        skills,
    })
}

/// Descend from the commit's tree `root` to `#subdir`, one folder at a time: its tree and its
/// repository path (the root and "" without `#subdir`).
fn descend(
    repo: &gix::Repository,
    root: ObjectId,
    src: &GitSource,
    commit: ObjectId,
) -> Result<(ObjectId, String), GitError> {
    let url = src.url.as_str();
    let mut base = root;
    let mut base_path = String::new();
    let Some(subdir) = &src.subdir else {
        return Ok((base, base_path));
    };
    for part in subdir.split('/') {
        let tree = repo
            .find_tree(base)
            .map_err(|e| read_error(url, "cannot read a tree", &e))?;
        let decoded = tree
            .decode()
            .map_err(|e| read_error(url, "cannot decode a tree", &e))?;
        let entry = decoded
            .entries
            .iter()
            .find(|e| e.filename.as_bytes() == part.as_bytes());
        let not_found = |detail: String| GitError::SubdirNotFound {
            subdir: subdir.clone(),
            url: url.to_string(),
            commit: commit.to_string(),
            detail,
        };
        base_path = join(&base_path, part);
        match entry {
            None => return Err(not_found(format!("`{base_path}` does not exist"))),
            Some(e) if e.mode.kind() == EntryKind::Tree => base = e.oid.to_owned(),
            Some(_) => return Err(not_found(format!("`{base_path}` is not a folder"))),
        }
    }
    Ok((base, base_path))
}

/// A tree entry as the walk reads it: its name (the raw bytes when not UTF-8), kind and id.
type TreeEntry = (Result<String, Vec<u8>>, EntryKind, ObjectId);

/// A folder waiting in the walk.
struct Folder {
    tree: ObjectId,
    /// Its repository path.
    path: String,
    /// The skill it belongs to (an index into [`Walk::skills`]).
    in_skill: Option<usize>,
    /// Its path inside that skill.
    rel: String,
}

impl Folder {
    /// The path inside the folder's skill of its entry `name` ("" outside a skill).
    fn skill_rel(&self, name: &str) -> String {
        if self.in_skill.is_some() {
            join(&self.rel, name)
        } else {
            String::new()
        }
    }
}

/// What the walk of the tree found.
#[derive(Default)]
struct Walk {
    skills: Vec<SkillDraft>,
    /// Files named SKILL.md (in any case) seen, nested ones included.
    candidates: u64,
    /// Bytes of every file seen.
    total_bytes: u64,
    /// Tree entries looked at.
    entries_seen: usize,
}

/// Walk the tree `base` (at repository path `base_path`): find the skills, count SKILL.md
/// files and bytes, note unsafe entries.
fn walk_tree(
    repo: &gix::Repository,
    base: ObjectId,
    base_path: String,
    url: &str,
) -> Result<Walk, GitError> {
    let mut walk = Walk::default();
    let mut stack = vec![Folder {
        tree: base,
        path: base_path,
        in_skill: None,
        rel: String::new(),
    }];
    while let Some(mut folder) = stack.pop() {
        let entries = tree_entries(repo, folder.tree, url)?;
        walk.count_entries(entries.len(), url, &folder.path)?;
        if folder.in_skill.is_none() {
            folder.in_skill = walk.start_skill(&folder.path, &entries);
        }
        for entry in entries {
            walk.visit(repo, url, &folder, entry, &mut stack)?;
        }
    }
    Ok(walk)
}

/// The entries of tree `id`, in the tree's order.
fn tree_entries(
    repo: &gix::Repository,
    id: ObjectId,
    url: &str,
) -> Result<Vec<TreeEntry>, GitError> {
    let tree = repo
        .find_tree(id)
        .map_err(|e| read_error(url, "cannot read a tree", &e))?;
    let decoded = tree
        .decode()
        .map_err(|e| read_error(url, "cannot decode a tree", &e))?;
    Ok(decoded
        .entries
        .iter()
        .map(|e| {
            let name = std::str::from_utf8(e.filename.as_bytes())
                .map(str::to_string)
                .map_err(|_| e.filename.as_bytes().to_vec());
            (name, e.mode.kind(), e.oid.to_owned())
        })
        .collect())
}

/// Whether a tree entry's name is unsafe as a file name (empty, `.`, `..`, a separator or a
/// control character in it).
fn is_odd_name(name: &str) -> bool {
    name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\'])
        || name.chars().any(char::is_control)
}

impl Walk {
    /// Count `n` more entries looked at (in the folder at `path`), against the built-in guard.
    fn count_entries(&mut self, n: usize, url: &str, path: &str) -> Result<(), GitError> {
        self.entries_seen += n;
        if self.entries_seen > MAX_TREE_ENTRIES {
            return Err(GitError::Limit {
                limit: "built-in tree entry limit",
                subject: join(url, path),
                found: self.entries_seen as u64,
                max: MAX_TREE_ENTRIES as u64,
                unit: "files and folders",
                scope: "looked at per import",
                fix: "point #subdir at a smaller folder",
            });
        }
        Ok(())
    }

    /// The skill the folder at `path` starts when its `entries` hold a SKILL.md file (not a
    /// folder of that name): a new draft, by its index.
    fn start_skill(&mut self, path: &str, entries: &[TreeEntry]) -> Option<usize> {
        let marks = entries
            .iter()
            .any(|(n, k, _)| n.as_deref().is_ok_and(is_skill_md) && *k != EntryKind::Tree);
        marks.then(|| {
            self.skills.push(SkillDraft {
                dir: path.to_string(),
                files: Vec::new(),
                unsafe_entries: Vec::new(),
            });
            self.skills.len() - 1
        })
    }

    /// Note an unsafe entry at `path` against the skill `in_skill` (outside a skill, it is
    /// ignored).
    fn refuse(
        &mut self,
        in_skill: Option<usize>,
        path: String,
        what: &'static str,
        fix: &'static str,
    ) {
        if let Some(i) = in_skill {
            self.skills[i].unsafe_entries.push((path, what, fix));
        }
    }

    /// Look at one entry of `folder`: a folder to walk, a file to count (and keep, inside a
    /// skill), or an entry a skill may not hold; `.git` is never entered.
    fn visit(
        &mut self,
        repo: &gix::Repository,
        url: &str,
        folder: &Folder,
        (name, kind, oid): TreeEntry,
        stack: &mut Vec<Folder>,
    ) -> Result<(), GitError> {
        let name = match name {
            Ok(n) => n,
            Err(raw) => {
                let path = join(&folder.path, &String::from_utf8_lossy(&raw));
                self.refuse(
                    folder.in_skill,
                    path,
                    "a file name that is not UTF-8",
                    "rename it",
                );
                return Ok(());
            }
        };
        if name == ".git" {
            return Ok(());
        }
        let full = join(&folder.path, &name);
        if is_odd_name(&name) {
            let fix = "rename it to a plain file name";
            self.refuse(folder.in_skill, full, "an unsafe file name", fix);
            return Ok(());
        }
        match kind {
            EntryKind::Tree => stack.push(Folder {
                tree: oid,
                rel: folder.skill_rel(&name),
                path: full,
                in_skill: folder.in_skill,
            }),
            EntryKind::Blob | EntryKind::BlobExecutable => {
                if name.eq_ignore_ascii_case("skill.md") {
                    self.candidates += 1;
                }
                let size = repo
                    .find_header(oid)
                    .map_err(|e| read_error(url, &format!("cannot read {full}"), &e))?
                    .size();
                self.total_bytes += size;
                if let Some(i) = folder.in_skill {
                    let exec = kind == EntryKind::BlobExecutable;
                    self.skills[i]
                        .files
                        .push((folder.skill_rel(&name), oid, exec, size));
                }
            }
            EntryKind::Link => {
                let fix = "replace the link by the file it points to";
                self.refuse(folder.in_skill, full, "a symbolic link", fix);
            }
            EntryKind::Commit => {
                let fix = "copy the files the skill needs into its folder instead";
                self.refuse(folder.in_skill, full, "a submodule", fix);
            }
        }
        Ok(())
    }
}

/// The import's limits, over what the walk found: bytes of files, SKILL.md files, at least one
/// skill and at most so many.
fn check_import(
    walk: &Walk,
    src: &GitSource,
    commit: ObjectId,
    limits: &GitLimits,
) -> Result<(), GitError> {
    let url = src.url.as_str();
    let scope_subject = match &src.subdir {
        Some(d) => format!("{url} at `{d}`"),
        None => url.to_string(),
    };
    if walk.total_bytes > limits.archive_bytes {
        return Err(GitError::Limit {
            limit: "archive_bytes",
            subject: scope_subject,
            found: walk.total_bytes,
            max: limits.archive_bytes,
            unit: "bytes of files",
            scope: "per import",
            fix: "point #subdir at the folder holding the skills you want",
        });
    }
    if walk.candidates > limits.skill_md_candidates as u64 {
        return Err(GitError::Limit {
            limit: "skill_md_candidates",
            subject: scope_subject,
            found: walk.candidates,
            max: limits.skill_md_candidates as u64,
            unit: "SKILL.md files",
            scope: "per import",
            fix: "point #subdir at the folder holding the skills you want",
        });
    }
    if walk.skills.is_empty() {
        return Err(GitError::NoSkill {
            url: url.to_string(),
            commit: commit.to_string(),
            where_: src
                .subdir
                .as_ref()
                .map(|d| format!(" under `{d}`"))
                .unwrap_or_default(),
        });
    }
    if walk.skills.len() > limits.skills_per_import {
        return Err(GitError::Limit {
            limit: "skills_per_import",
            subject: scope_subject,
            found: walk.skills.len() as u64,
            max: limits.skills_per_import as u64,
            unit: "skills",
            scope: "per import",
            fix: "import fewer at a time, selecting a folder with #subdir",
        });
    }
    Ok(())
}

/// Each skill's own checks, in folder order: no unsafe entry (the first, by path, is named),
/// at most so many files and bytes. Sorts the skills by folder and their files by path.
fn check_skills(skills: &mut [SkillDraft], limits: &GitLimits) -> Result<(), GitError> {
    skills.sort_by(|a, b| a.dir.cmp(&b.dir));
    for skill in skills {
        skill.unsafe_entries.sort();
        if let Some((path, what, fix)) = skill.unsafe_entries.first() {
            return Err(GitError::UnsafeEntry {
                path: path.clone(),
                what,
                fix,
            });
        }
        if skill.files.len() > limits.files_per_skill {
            return Err(GitError::Limit {
                limit: "files_per_skill",
                subject: skill_label(&skill.dir),
                found: skill.files.len() as u64,
                max: limits.files_per_skill as u64,
                unit: "files",
                scope: "per skill",
                fix: "remove files the skill does not need, or split it",
            });
        }
        let bytes: u64 = skill.files.iter().map(|f| f.3).sum();
        if bytes > limits.bytes_per_skill {
            return Err(GitError::Limit {
                limit: "bytes_per_skill",
                subject: skill_label(&skill.dir),
                found: bytes,
                max: limits.bytes_per_skill,
                unit: "bytes",
                scope: "per skill",
                fix: "remove large files the skill does not need, or split it",
            });
        }
        skill.files.sort_by(|a, b| a.0.cmp(&b.0));
    }
    Ok(())
}

/// Read the files of the (checked) skills.
fn read_files(
    repo: &gix::Repository,
    skills: Vec<SkillDraft>,
    url: &str,
) -> Result<Vec<FetchedSkill>, GitError> {
    let mut out = Vec::with_capacity(skills.len());
    for skill in skills {
        let mut files = Vec::with_capacity(skill.files.len());
        for (path, oid, executable, _) in skill.files {
            let bytes = repo
                .find_object(oid)
                .map_err(|e| {
                    let what = format!("cannot read {}", join(&skill.dir, &path));
                    read_error(url, &what, &e)
                })?
                .detach()
                .data;
            files.push(FetchedFile {
                path,
                bytes,
                executable,
            });
        }
        out.push(FetchedSkill {
            dir: skill.dir,
            files,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Child, Command, Stdio};
    use tempfile::TempDir;

    // ---- fixtures: repositories made with the `git` program (tests only) ----

    /// Runs `git` in `dir` with no system or user configuration, and returns its trimmed stdout.
    fn git(home: &Path, dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "tag.gpgsign=false",
                "-c",
                "core.symlinks=true",
            ])
            .args(args)
            .current_dir(dir)
            .env("HOME", home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .stdin(Stdio::null())
            .output()
            .expect("the git program runs");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// A work repository (`origin`) in a temporary folder, with a cache folder beside it.
    struct Repo {
        tmp: TempDir,
        work: PathBuf,
    }

    impl Repo {
        fn new() -> Repo {
            let tmp = tempfile::tempdir().unwrap();
            let work = tmp.path().join("origin");
            fs::create_dir_all(&work).unwrap();
            fs::create_dir_all(tmp.path().join("home")).unwrap();
            let r = Repo { tmp, work };
            r.git(&["init", "-q"]);
            r
        }
        fn home(&self) -> PathBuf {
            self.tmp.path().join("home")
        }
        fn cache(&self) -> PathBuf {
            self.tmp.path().join("cache")
        }
        fn git(&self, args: &[&str]) -> String {
            git(&self.home(), &self.work, args)
        }
        fn write(&self, rel: &str, bytes: &[u8]) {
            let p = self.work.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, bytes).unwrap();
        }
        fn write_exec(&self, rel: &str, bytes: &[u8]) {
            self.write(rel, bytes);
            let p = self.work.join(rel);
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        }
        fn commit(&self, msg: &str) -> String {
            self.git(&["add", "-A"]);
            self.git(&["commit", "-q", "-m", msg]);
            self.git(&["rev-parse", "HEAD"])
        }
        fn url(&self) -> String {
            format!("file://{}", self.work.display())
        }
        fn src(&self, suffix: &str) -> GitSource {
            GitSource::parse(&format!("git+{}{suffix}", self.url())).unwrap()
        }
        fn fetch(&self, suffix: &str) -> Result<Fetched, GitError> {
            fetch(&self.src(suffix), &GitLimits::default(), &self.cache())
        }
        fn fetch_limited(&self, suffix: &str, limits: &GitLimits) -> Result<Fetched, GitError> {
            fetch(&self.src(suffix), limits, &self.cache())
        }
    }

    const A_SKILL: &[u8] = b"---\nname: a\ndescription: Skill a.\n---\nDo a.\n";
    const A_RUN: &[u8] = b"#!/bin/sh\necho a\n";
    const A_NOTES: &[u8] = b"notes for a\n";
    const B_SKILL: &[u8] = b"---\nname: b\ndescription: Skill b.\n---\nDo b.\n";
    const B_DEV: &[u8] = b"---\nname: b\ndescription: Skill b, on dev.\n---\nDo b better.\n";
    const ROOT_SKILL: &[u8] = b"---\nname: root\ndescription: The root skill.\n---\nAll.\n";

    /// main: C1 (skills/a, skills/b, README.md, docs/) then C2 (a SKILL.md at the root);
    /// the annotated tag v1 and the lightweight tag light at C1; dev: C1 then C3 (skills/b changed).
    struct Standard {
        repo: Repo,
        c1: String,
        c2: String,
        c3: String,
    }

    fn standard() -> Standard {
        let repo = Repo::new();
        repo.write("skills/a/SKILL.md", A_SKILL);
        repo.write_exec("skills/a/run.sh", A_RUN);
        repo.write("skills/a/ref/notes.md", A_NOTES);
        repo.write("skills/b/SKILL.md", B_SKILL);
        repo.write("README.md", b"# skills\n");
        repo.write("docs/guide.md", b"a guide\n");
        let c1 = repo.commit("c1");
        repo.git(&["tag", "-a", "v1", "-m", "version 1"]);
        repo.git(&["tag", "light"]);
        repo.git(&["checkout", "-q", "-b", "dev"]);
        repo.write("skills/b/SKILL.md", B_DEV);
        let c3 = repo.commit("c3");
        repo.git(&["checkout", "-q", "main"]);
        repo.write("SKILL.md", ROOT_SKILL);
        let c2 = repo.commit("c2");
        Standard { repo, c1, c2, c3 }
    }

    fn dirs(f: &Fetched) -> Vec<&str> {
        f.skills.iter().map(|s| s.dir.as_str()).collect()
    }

    fn paths(s: &FetchedSkill) -> Vec<&str> {
        s.files.iter().map(|f| f.path.as_str()).collect()
    }

    fn file<'a>(s: &'a FetchedSkill, path: &str) -> &'a FetchedFile {
        s.files
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("{path} in {:?}", paths(s)))
    }

    /// Checks the two skills of commit C1 (or C3, with `b` the skills/b/SKILL.md text).
    fn assert_c1_skills(f: &Fetched, b: &[u8]) {
        assert_eq!(dirs(f), ["skills/a", "skills/b"]);
        let a = &f.skills[0];
        assert_eq!(paths(a), ["SKILL.md", "ref/notes.md", "run.sh"]);
        assert_eq!(file(a, "SKILL.md").bytes, A_SKILL);
        assert_eq!(file(a, "ref/notes.md").bytes, A_NOTES);
        assert_eq!(file(a, "run.sh").bytes, A_RUN);
        assert!(file(a, "run.sh").executable, "100755 is executable");
        assert!(!file(a, "SKILL.md").executable);
        assert!(!file(a, "ref/notes.md").executable);
        assert_eq!(paths(&f.skills[1]), ["SKILL.md"]);
        assert_eq!(f.skills[1].files[0].bytes, b);
    }

    fn msg(r: Result<Fetched, GitError>) -> (GitError, String) {
        match r {
            Ok(f) => panic!("expected an error, got skills {:?}", dirs(&f)),
            Err(e) => {
                let m = e.to_string();
                (e, m)
            }
        }
    }

    // ---- parse ----

    #[test]
    fn parse_accepts_good_specs_and_round_trips() {
        let cases: &[(&str, &str, Option<&str>, Option<&str>)] = &[
            (
                "git+https://example.com/skills.git",
                "https://example.com/skills.git",
                None,
                None,
            ),
            (
                "git+http://example.com/skills",
                "http://example.com/skills",
                None,
                None,
            ),
            (
                "git+https://example.com/skills.git@v1.2.0",
                "https://example.com/skills.git",
                Some("v1.2.0"),
                None,
            ),
            (
                "git+https://example.com/org/skills.git@v1#skills/pdf",
                "https://example.com/org/skills.git",
                Some("v1"),
                Some("skills/pdf"),
            ),
            (
                "git+https://example.com/skills.git#skills/pdf",
                "https://example.com/skills.git",
                None,
                Some("skills/pdf"),
            ),
            // The user's `git@` is not a ref: it comes before the path.
            (
                "git+ssh://git@host/repo.git",
                "ssh://git@host/repo.git",
                None,
                None,
            ),
            (
                "git+ssh://git@host/repo.git@v1",
                "ssh://git@host/repo.git",
                Some("v1"),
                None,
            ),
            (
                "git+ssh://git@host:2222/org/repo.git@feature/x#a",
                "ssh://git@host:2222/org/repo.git",
                Some("feature/x"),
                Some("a"),
            ),
            (
                "git+file:///srv/git/skills",
                "file:///srv/git/skills",
                None,
                None,
            ),
            (
                "git+file:///srv/git/skills@3f2a9c1#.claude/skills",
                "file:///srv/git/skills",
                Some("3f2a9c1"),
                Some(".claude/skills"),
            ),
            (
                "git+git://127.0.0.1:9418/repo.git@refs/heads/main",
                "git://127.0.0.1:9418/repo.git",
                Some("refs/heads/main"),
                None,
            ),
        ];
        for (spec, url, reference, subdir) in cases {
            let s = GitSource::parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(s.url, *url, "{spec}");
            assert_eq!(s.reference.as_deref(), *reference, "{spec}");
            assert_eq!(s.subdir.as_deref(), *subdir, "{spec}");
            assert_eq!(s.to_spec(), *spec, "canonical text of {spec}");
            assert_eq!(s.to_string(), *spec);
            assert_eq!(
                GitSource::parse(&s.to_spec()).unwrap(),
                s,
                "round trip of {spec}"
            );
        }
        // One trailing '/' on the folder is dropped from the canonical text.
        let s = GitSource::parse("git+https://h.example/r.git#skills/pdf/").unwrap();
        assert_eq!(s.subdir.as_deref(), Some("skills/pdf"));
        assert_eq!(s.to_spec(), "git+https://h.example/r.git#skills/pdf");
        // Exactly at the length limit is fine.
        let base = "git+https://h.example/";
        let spec = format!("{base}{}", "a".repeat(MAX_SPEC_BYTES - base.len()));
        assert_eq!(spec.len(), MAX_SPEC_BYTES);
        assert!(GitSource::parse(&spec).is_ok());
    }

    #[test]
    fn parse_refuses_bad_specs_saying_what_to_write() {
        let long = format!("git+https://h.example/{}", "a".repeat(MAX_SPEC_BYTES));
        let cases: &[(&str, &str)] = &[
            ("", "starts with `git+`"),
            ("https://h.example/r.git", "starts with `git+`"),
            ("git:https://h.example/r.git", "starts with `git+`"),
            ("git+", "no scheme"),
            ("git+h.example/r.git", "no scheme"),
            ("git+git@h.example:org/r.git", "ssh://git@host/repo"),
            ("git+ftp://h.example/r.git", "scheme `ftp` is not supported"),
            (
                "git+HTTPS://h.example/r.git",
                "scheme `HTTPS` is not supported",
            ),
            ("git+https://", "no repository path"),
            ("git+https://h.example", "no repository path"),
            (
                "git+https://h.example/",
                "no repository path after the host",
            ),
            ("git+https:///r.git", "no host"),
            ("git+ssh://git@/r.git", "no host"),
            ("git+file://host/srv/r", "names no host"),
            (
                "git+https://h.example/r.git@",
                "reference after `@` is empty",
            ),
            (
                "git+https://h.example/r.git@#a",
                "reference after `@` is empty",
            ),
            (
                "git+https://h.example/r.git@a..b",
                "not a valid git reference",
            ),
            (
                "git+https://h.example/r.git@a~1",
                "not a valid git reference",
            ),
            (
                "git+https://h.example/r.git@a:b",
                "not a valid git reference",
            ),
            ("git+https://h.example/r.git@-x", "starts with `-`"),
            ("git+https://h.example/r.git#", "folder after `#` is empty"),
            ("git+https://h.example/r.git#..", "`..`"),
            ("git+https://h.example/r.git#../x", "`..`"),
            ("git+https://h.example/r.git#a/../../b", "`..`"),
            ("git+https://h.example/r.git#./a", "`.`"),
            ("git+https://h.example/r.git#/abs", "starts with `/`"),
            ("git+https://h.example/r.git#a\\b", "backslash"),
            ("git+https://h.example/r.git#a//b", "empty part"),
            ("git+https://h.example/r.git#.git/hooks", "`.git`"),
            ("git+https://h.example/r .git", "a space"),
            (" git+https://h.example/r.git", "a space"),
            ("git+https://h.example/r.git\n", "control character"),
            ("git+https://h.example/r.git#a\u{7f}", "control character"),
            ("git+https://h.example/r.git#a\u{0}b", "control character"),
            ("git+https://h.example/r.git@v1\tx", "whitespace"),
            ("git+https://h.example/r.git#a\u{a0}b", "whitespace"),
            (&long, "over the limit of 2048 bytes"),
        ];
        for (spec, expected) in cases {
            match GitSource::parse(spec) {
                Ok(s) => panic!("{spec:?} was accepted as {s:?}"),
                Err(e) => {
                    assert!(matches!(e, GitError::Spec { .. }), "{spec:?}: {e:?}");
                    let m = e.to_string();
                    assert!(m.contains(expected), "{spec:?}: {m:?} lacks {expected:?}");
                    assert!(m.contains("write"), "{spec:?}: {m:?} says what to write");
                    assert!(
                        m.len() < 1000,
                        "the message quotes a long spec cut: {}",
                        m.len()
                    );
                }
            }
        }
    }

    // ---- fetch over file:// ----

    #[test]
    fn file_fetch_at_head_reads_the_root_skill_whole() {
        let s = standard();
        let f = s.repo.fetch("").unwrap();
        assert_eq!(f.commit, s.c2);
        assert_eq!(f.commit, s.repo.git(&["rev-parse", "HEAD"]));
        assert_eq!(f.commit.len(), 40);
        assert!(
            f.commit
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        // The root's SKILL.md makes it the only skill: skills/a and skills/b are its files.
        assert_eq!(dirs(&f), [""]);
        let root = &f.skills[0];
        assert_eq!(
            paths(root),
            [
                "README.md",
                "SKILL.md",
                "docs/guide.md",
                "skills/a/SKILL.md",
                "skills/a/ref/notes.md",
                "skills/a/run.sh",
                "skills/b/SKILL.md",
            ]
        );
        assert_eq!(file(root, "SKILL.md").bytes, ROOT_SKILL);
        assert_eq!(file(root, "skills/a/run.sh").bytes, A_RUN);
        assert!(file(root, "skills/a/run.sh").executable);
        assert!(!file(root, "README.md").executable);
        // Read in place: nothing is copied into the cache for a local repository.
        assert!(!s.repo.cache().join("objects").exists());
    }

    #[test]
    fn file_fetch_at_branch_tags_and_commit_ids() {
        let s = standard();
        let r = &s.repo;
        let dev = r.fetch("@dev").unwrap();
        assert_eq!(dev.commit, s.c3);
        assert_eq!(dev.commit, r.git(&["rev-parse", "dev"]));
        assert_c1_skills(&dev, B_DEV);
        assert_eq!(r.fetch("@refs/heads/dev").unwrap(), dev);

        // The annotated tag is peeled to its commit.
        let tag_object = r.git(&["rev-parse", "v1"]);
        assert_ne!(tag_object, s.c1, "v1 is an annotated tag (a tag object)");
        assert_eq!(r.git(&["cat-file", "-t", "v1"]), "tag");
        let v1 = r.fetch("@v1").unwrap();
        assert_eq!(v1.commit, s.c1);
        assert_eq!(v1.commit, r.git(&["rev-parse", "v1^{commit}"]));
        assert_c1_skills(&v1, B_SKILL);
        assert_eq!(r.fetch("@refs/tags/v1").unwrap(), v1);
        assert_eq!(r.fetch("@light").unwrap(), v1);

        // Full and abbreviated commit ids, any case.
        assert_eq!(r.fetch(&format!("@{}", s.c1)).unwrap(), v1);
        assert_eq!(r.fetch(&format!("@{}", &s.c1[..8])).unwrap(), v1);
        assert_eq!(
            r.fetch(&format!("@{}", s.c1[..7].to_uppercase())).unwrap(),
            v1
        );
        assert_eq!(r.fetch(&format!("@{}", &s.c3[..10])).unwrap(), dev);
        assert_eq!(r.fetch("@HEAD").unwrap().commit, s.c2);
        assert_eq!(r.fetch("@main").unwrap().commit, s.c2);
    }

    #[test]
    fn file_fetch_subdir_selects_one_skill() {
        let s = standard();
        let r = &s.repo;
        let a = r.fetch("@v1#skills/a").unwrap();
        assert_eq!(a.commit, s.c1);
        assert_eq!(dirs(&a), ["skills/a"], "dir is the path in the repository");
        assert_eq!(paths(&a.skills[0]), ["SKILL.md", "ref/notes.md", "run.sh"]);
        assert!(file(&a.skills[0], "run.sh").executable);
        // At HEAD the root is a skill, but #skills/b looks only below skills/b.
        let b = r.fetch("#skills/b").unwrap();
        assert_eq!(b.commit, s.c2);
        assert_eq!(dirs(&b), ["skills/b"]);
        assert_eq!(b.skills[0].files[0].bytes, B_SKILL);
        let both = r.fetch("@dev#skills/").unwrap();
        assert_c1_skills(&both, B_DEV);

        let (e, m) = msg(r.fetch("#docs"));
        assert!(matches!(e, GitError::NoSkill { .. }), "{e:?}");
        assert!(m.contains("no skill found") && m.contains("`docs`"), "{m}");
        let (e, m) = msg(r.fetch("#skills/zzz"));
        assert!(matches!(e, GitError::SubdirNotFound { .. }), "{e:?}");
        assert!(m.contains("skills/zzz") && m.contains(&s.c2), "{m}");
        let (e, m) = msg(r.fetch("#README.md"));
        assert!(matches!(e, GitError::SubdirNotFound { .. }), "{e:?}");
        assert!(m.contains("not a folder"), "{m}");
    }

    #[test]
    fn file_fetch_sees_a_new_commit() {
        let s = standard();
        let first = s.repo.fetch("@dev").unwrap();
        s.repo.git(&["checkout", "-q", "dev"]);
        s.repo.write(
            "skills/b/SKILL.md",
            b"---\nname: b\ndescription: Newer.\n---\n",
        );
        let c4 = s.repo.commit("c4");
        let second = s.repo.fetch("@dev").unwrap();
        assert_ne!(second.commit, first.commit);
        assert_eq!(second.commit, c4);
        assert_eq!(
            second.skills[1].files[0].bytes,
            b"---\nname: b\ndescription: Newer.\n---\n"
        );
    }

    #[test]
    fn missing_ref_is_named_with_what_exists() {
        let s = standard();
        let (e, m) = msg(s.repo.fetch("@nope"));
        assert!(matches!(e, GitError::RefNotFound { .. }), "{e:?}");
        assert!(m.contains("`nope`"), "{m}");
        assert!(m.contains("branches: dev, main"), "{m}");
        assert!(m.contains("tags: light, v1"), "{m}");
        // A hex-looking name that matches no object.
        let (e, m) = msg(s.repo.fetch("@deadbeef"));
        assert!(matches!(e, GitError::RefNotFound { .. }), "{e:?}");
        assert!(m.contains("`deadbeef`"), "{m}");
    }

    #[test]
    fn ref_list_in_errors_is_capped_at_ten() {
        let r = Repo::new();
        r.write("s/SKILL.md", A_SKILL);
        r.commit("one");
        for i in 0..14 {
            r.git(&["branch", &format!("b{i:02}")]);
        }
        let (_, m) = msg(r.fetch("@nope"));
        assert!(m.contains("b00, b01"), "{m}");
        assert!(m.contains("b09 (and 5 more)"), "{m}");
        assert!(
            !m.contains("b10") && !m.contains("main"),
            "ten names at most: {m}"
        );
    }

    #[test]
    fn a_name_both_branch_and_tag_is_ambiguous() {
        let r = Repo::new();
        r.write("s/SKILL.md", A_SKILL);
        r.commit("one");
        r.git(&["tag", "x"]);
        r.write("s/SKILL.md", B_SKILL);
        r.commit("two");
        r.git(&["branch", "x"]);
        let (e, m) = msg(r.fetch("@x"));
        assert!(matches!(e, GitError::AmbiguousRef { .. }), "{e:?}");
        assert!(
            m.contains("@refs/heads/x") && m.contains("@refs/tags/x"),
            "{m}"
        );
        assert_eq!(
            r.fetch("@refs/tags/x").unwrap().skills[0].files[0].bytes,
            A_SKILL
        );
        assert_eq!(
            r.fetch("@refs/heads/x").unwrap().skills[0].files[0].bytes,
            B_SKILL
        );
    }

    #[test]
    fn a_ref_to_a_tree_is_not_a_commit() {
        let r = Repo::new();
        r.write("s/SKILL.md", A_SKILL);
        r.commit("one");
        let tree = r.git(&["rev-parse", "HEAD^{tree}"]);
        let (e, m) = msg(r.fetch(&format!("@{tree}")));
        assert!(matches!(e, GitError::NotACommit { .. }), "{e:?}");
        assert!(m.contains("a tree"), "{m}");
    }

    #[test]
    fn no_skill_and_unreachable_repositories_are_errors() {
        let r = Repo::new();
        r.write("README.md", b"no skills here\n");
        r.write("docs/SKILL.txt", b"not a SKILL.md\n");
        let c = r.commit("one");
        let (e, m) = msg(r.fetch(""));
        assert!(matches!(e, GitError::NoSkill { .. }), "{e:?}");
        assert!(m.contains(&c) && m.contains("SKILL.md"), "{m}");

        let missing = r.tmp.path().join("does-not-exist");
        let spec = format!("git+file://{}", missing.display());
        let src = GitSource::parse(&spec).unwrap();
        let (e, m) = msg(fetch(&src, &GitLimits::default(), &r.cache()));
        assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
        assert!(m.contains(&format!("file://{}", missing.display())), "{m}");

        // A folder that is not a repository.
        let plain = r.tmp.path().join("plain");
        fs::create_dir_all(&plain).unwrap();
        let src = GitSource::parse(&format!("git+file://{}", plain.display())).unwrap();
        let (e, m) = msg(fetch(&src, &GitLimits::default(), &r.cache()));
        assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
        assert!(m.contains("not a git repository"), "{m}");

        // An empty repository has no HEAD to read.
        let empty = Repo::new();
        let (e, m) = msg(empty.fetch(""));
        assert!(matches!(e, GitError::NoHead { .. }), "{e:?}");
        assert!(m.contains("@REF"), "{m}");
    }

    #[test]
    fn http_is_parsed_but_not_fetched_in_this_build() {
        let tmp = tempfile::tempdir().unwrap();
        for spec in [
            "git+https://example.invalid/r.git",
            "git+http://example.invalid/r.git@v1",
        ] {
            let src = GitSource::parse(spec).unwrap();
            let (e, m) = msg(fetch(&src, &GitLimits::default(), tmp.path()));
            assert!(matches!(e, GitError::UnsupportedTransport { .. }), "{e:?}");
            assert!(m.contains("not supported in this build"), "{m}");
            assert!(m.contains("example.invalid"), "{m}");
        }
        assert_eq!(
            fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "no cache made"
        );
    }

    // ---- limits and unsafe entries ----

    fn limits() -> GitLimits {
        GitLimits::default()
    }

    #[test]
    fn too_many_files_in_a_skill() {
        let r = Repo::new();
        r.write("skills/big/SKILL.md", A_SKILL);
        for i in 0..4 {
            r.write(&format!("skills/big/f{i}.md"), b"x");
        }
        r.write("skills/small/SKILL.md", B_SKILL);
        r.commit("one");
        let l = GitLimits {
            files_per_skill: 4,
            ..limits()
        };
        let (e, m) = msg(r.fetch_limited("", &l));
        assert!(
            matches!(
                e,
                GitError::Limit {
                    limit: "files_per_skill",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            m.starts_with(
                "skills/big: 5 files, over the limit of 4 files per skill (files_per_skill)"
            ),
            "{m}"
        );
        let l = GitLimits {
            files_per_skill: 5,
            ..limits()
        };
        assert_eq!(
            r.fetch_limited("", &l).unwrap().skills.len(),
            2,
            "5 files are allowed"
        );
    }

    #[test]
    fn too_many_bytes_in_a_skill() {
        let r = Repo::new();
        r.write("SKILL.md", &[b'a'; 400]);
        r.write("data.bin", &[7u8; 700]);
        r.commit("one");
        let l = GitLimits {
            bytes_per_skill: 1099,
            ..limits()
        };
        let (e, m) = msg(r.fetch_limited("", &l));
        assert!(
            matches!(
                e,
                GitError::Limit {
                    limit: "bytes_per_skill",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            m.starts_with(
                "the skill at the repository's root: 1100 bytes, over the limit of 1099 bytes \
                 per skill (bytes_per_skill)"
            ),
            "{m}"
        );
        let l = GitLimits {
            bytes_per_skill: 1100,
            ..limits()
        };
        let f = r.fetch_limited("", &l).unwrap();
        assert_eq!(file(&f.skills[0], "data.bin").bytes, vec![7u8; 700]);
    }

    #[test]
    fn too_many_skill_md_candidates_and_too_many_skills() {
        let r = Repo::new();
        for name in ["a", "b", "c"] {
            r.write(&format!("skills/{name}/SKILL.md"), A_SKILL);
        }
        // A nested SKILL.md inside skill a: a candidate, but not a skill of its own.
        r.write("skills/a/nested/SKILL.md", B_SKILL);
        r.commit("one");
        let l = GitLimits {
            skill_md_candidates: 3,
            ..limits()
        };
        let (e, m) = msg(r.fetch_limited("", &l));
        assert!(
            matches!(
                e,
                GitError::Limit {
                    limit: "skill_md_candidates",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            m.contains("4 SKILL.md files, over the limit of 3 SKILL.md files per import"),
            "{m}"
        );
        let l = GitLimits {
            skills_per_import: 2,
            ..limits()
        };
        let (e, m) = msg(r.fetch_limited("", &l));
        assert!(
            matches!(
                e,
                GitError::Limit {
                    limit: "skills_per_import",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            m.contains("3 skills, over the limit of 2 skills per import (skills_per_import)"),
            "{m}"
        );
        let l = GitLimits {
            skills_per_import: 3,
            skill_md_candidates: 4,
            ..limits()
        };
        let f = r.fetch_limited("", &l).unwrap();
        assert_eq!(dirs(&f), ["skills/a", "skills/b", "skills/c"]);
        assert_eq!(paths(&f.skills[0]), ["SKILL.md", "nested/SKILL.md"]);
        // #subdir narrows what is counted.
        let l = GitLimits {
            skills_per_import: 1,
            skill_md_candidates: 1,
            ..limits()
        };
        assert_eq!(
            dirs(&r.fetch_limited("#skills/b", &l).unwrap()),
            ["skills/b"]
        );
    }

    #[test]
    fn archive_size_counts_the_files_of_the_tree() {
        let r = Repo::new();
        r.write("skills/a/SKILL.md", &[b'a'; 300]);
        r.write("other/big.bin", &[1u8; 5000]);
        r.commit("one");
        let l = GitLimits {
            archive_bytes: 5299,
            ..limits()
        };
        let (e, m) = msg(r.fetch_limited("", &l));
        assert!(
            matches!(
                e,
                GitError::Limit {
                    limit: "archive_bytes",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            m.contains("5300 bytes of files, over the limit of 5299 bytes of files per import"),
            "{m}"
        );
        // Only the tree at #subdir counts.
        assert_eq!(dirs(&r.fetch_limited("#skills", &l).unwrap()), ["skills/a"]);
    }

    #[test]
    fn a_symlink_inside_a_skill_is_refused_outside_ignored() {
        let r = Repo::new();
        r.write("skills/a/SKILL.md", A_SKILL);
        r.write("skills/a/target.md", b"t\n");
        std::os::unix::fs::symlink("target.md", r.work.join("skills/a/link.md")).unwrap();
        r.write("skills/b/SKILL.md", B_SKILL);
        std::os::unix::fs::symlink("skills", r.work.join("outside-link")).unwrap();
        r.commit("one");
        assert_eq!(
            r.git(&["ls-files", "-s", "skills/a/link.md"])
                .split(' ')
                .next(),
            Some("120000")
        );
        let (e, m) = msg(r.fetch(""));
        assert!(matches!(e, GitError::UnsafeEntry { .. }), "{e:?}");
        assert!(m.starts_with("skills/a/link.md: a symbolic link"), "{m}");
        assert!(m.contains("whole import"), "{m}");
        // The skill without the link is fine alone; the link outside any skill is ignored.
        assert_eq!(dirs(&r.fetch("#skills/b").unwrap()), ["skills/b"]);
    }

    #[test]
    fn a_submodule_inside_a_skill_is_refused() {
        let r = Repo::new();
        r.write("skills/a/SKILL.md", A_SKILL);
        let c1 = r.commit("one");
        r.git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{c1},skills/a/vendor"),
        ]);
        r.git(&["commit", "-q", "-m", "submodule"]);
        let (e, m) = msg(r.fetch(""));
        assert!(matches!(e, GitError::UnsafeEntry { .. }), "{e:?}");
        assert!(m.starts_with("skills/a/vendor: a submodule"), "{m}");
    }

    #[test]
    fn dot_git_is_never_entered() {
        // A tree with a `.git` folder holding a SKILL.md, made with git's plumbing.
        let r = Repo::new();
        r.write("skills/a/SKILL.md", A_SKILL);
        r.commit("one");
        let blob = r.git(&["rev-parse", "HEAD:skills/a/SKILL.md"]);
        let skills = r.git(&["rev-parse", "HEAD:skills"]);
        let inner = {
            let mut child = Command::new("git")
                .args(["mktree"])
                .current_dir(&r.work)
                .env("HOME", r.home())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            let mut stdin = child.stdin.take().unwrap();
            writeln!(stdin, "100644 blob {blob}\tSKILL.md").unwrap();
            drop(stdin);
            let mut out = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            assert!(child.wait().unwrap().success());
            out.trim().to_string()
        };
        let mktree = |lines: String| {
            let mut child = Command::new("git")
                .args(["mktree"])
                .current_dir(&r.work)
                .env("HOME", r.home())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(lines.as_bytes())
                .unwrap();
            let mut out = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            assert!(child.wait().unwrap().success());
            out.trim().to_string()
        };
        let top = mktree(format!(
            "040000 tree {inner}\t.git\n040000 tree {skills}\tskills\n"
        ));
        let commit = r.git(&["commit-tree", &top, "-m", "dot git"]);
        r.git(&["update-ref", "refs/heads/odd", &commit]);
        let f = r.fetch("@odd").unwrap();
        assert_eq!(f.commit, commit);
        assert_eq!(dirs(&f), ["skills/a"], ".git/SKILL.md is not a skill");
        // Also under #subdir: `.git` is refused as a folder.
        let (e, _) = (GitSource::parse(&format!("git+{}#.git", r.url())), ());
        assert!(e.is_err());
    }

    // ---- fetch over git:// from a git daemon ----

    /// A `git daemon` on 127.0.0.1, killed when dropped (also on panic).
    struct Daemon {
        child: Child,
        port: u16,
    }

    impl Drop for Daemon {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The `git-daemon` program itself, when it is installed. It is run directly, not as
    /// `git daemon`: the `git` wrapper would start it as a child of its own, which killing the
    /// wrapper leaves running (holding the port, and any descriptor the test inherited).
    fn git_daemon_program() -> Option<std::path::PathBuf> {
        let out = Command::new("git").arg("--exec-path").output().ok()?;
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let p = Path::new(&dir).join("git-daemon");
        p.exists().then_some(p)
    }

    /// Starts `git-daemon` serving `base`, or `None` when it is not available.
    fn start_daemon(base: &Path, home: &Path) -> Option<Daemon> {
        let program = git_daemon_program()?;
        for _attempt in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = Command::new(&program)
                .arg("--reuseaddr")
                .arg(format!("--base-path={}", base.display()))
                .arg("--export-all")
                .arg("--listen=127.0.0.1")
                .arg(format!("--port={port}"))
                .arg(base)
                .env("HOME", home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", home.join("gitconfig"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            let Ok(child) = child else { return None };
            let mut daemon = Daemon { child, port };
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if daemon.child.try_wait().unwrap().is_some() {
                    break; // exited: most likely the port was taken; try another
                }
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(daemon);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = daemon.child.kill();
        }
        None
    }

    fn cache_repos(cache: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".git"))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn git_daemon_fetch_caches_and_updates() {
        let s = standard();
        let r = &s.repo;
        let base = r.tmp.path().join("served");
        fs::create_dir_all(&base).unwrap();
        git(
            &r.home(),
            r.tmp.path(),
            &["clone", "-q", "--bare", "origin", "served/repo.git"],
        );
        let bare = base.join("repo.git");
        // dev is a branch of the served repository too.
        git(
            &r.home(),
            &r.work,
            &["push", "-q", bare.to_str().unwrap(), "dev"],
        );
        let Some(daemon) = start_daemon(&base, &r.home()) else {
            eprintln!("skipped: git daemon not available");
            return;
        };
        let url = format!("git://127.0.0.1:{}/repo.git", daemon.port);
        let cache = r.cache();
        let get = |suffix: &str, limits: &GitLimits| {
            fetch(
                &GitSource::parse(&format!("git+{url}{suffix}")).unwrap(),
                limits,
                &cache,
            )
        };

        let head = get("", &limits()).unwrap();
        assert_eq!(head.commit, s.c2);
        assert_eq!(head.commit, git(&r.home(), &bare, &["rev-parse", "HEAD"]));
        assert_eq!(head, r.fetch("").unwrap(), "same result as in place");
        assert_eq!(cache_repos(&cache).len(), 1, "one bare repository per URL");
        let cached = cache.join(&cache_repos(&cache)[0]);
        assert!(cached.join("objects").is_dir() && cached.join("HEAD").is_file());

        let v1 = get("@v1", &limits()).unwrap();
        assert_eq!(v1.commit, s.c1);
        assert_c1_skills(&v1, B_SKILL);
        let dev = get("@dev", &limits()).unwrap();
        assert_eq!(dev.commit, s.c3);
        assert_c1_skills(&dev, B_DEV);
        assert_eq!(get(&format!("@{}", s.c1), &limits()).unwrap(), v1);
        assert_eq!(get(&format!("@{}", &s.c3[..9]), &limits()).unwrap(), dev);
        let a = get("@v1#skills/a", &limits()).unwrap();
        assert_eq!(dirs(&a), ["skills/a"]);
        assert!(file(&a.skills[0], "run.sh").executable);

        let (e, m) = msg(get("@nope", &limits()));
        assert!(matches!(e, GitError::RefNotFound { .. }), "{e:?}");
        assert!(
            m.contains("`nope`") && m.contains("branches: dev, main"),
            "{m}"
        );
        assert!(m.contains("tags: light, v1") && m.contains(&url), "{m}");

        // A new commit in the origin: the next fetch gets it (the cache is not stale).
        r.write("skills/new/SKILL.md", B_SKILL);
        r.git(&["rm", "-q", "SKILL.md"]);
        let c4 = r.commit("c4");
        git(
            &r.home(),
            &r.work,
            &["push", "-q", bare.to_str().unwrap(), "main"],
        );
        let after = get("", &limits()).unwrap();
        assert_eq!(after.commit, c4);
        assert_eq!(dirs(&after), ["skills/a", "skills/b", "skills/new"]);
        assert_eq!(get("@main", &limits()).unwrap().commit, c4);
        assert_eq!(
            cache_repos(&cache).len(),
            1,
            "the same cache repository was updated"
        );

        // The packed size of the fetched repository is held to archive_bytes; the copy over
        // the limit is not kept.
        let tiny = GitLimits {
            archive_bytes: 100,
            ..limits()
        };
        let (e, m) = msg(get("", &tiny));
        assert!(
            matches!(
                e,
                GitError::Limit {
                    limit: "archive_bytes",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            m.contains("bytes packed, over the limit of 100 bytes packed"),
            "{m}"
        );
        assert!(cache_repos(&cache).is_empty(), "{:?}", cache_repos(&cache));
        // And the next import starts afresh.
        assert_eq!(get("@v1", &limits()).unwrap(), v1);

        // A repository the daemon does not have.
        let missing = format!("git+git://127.0.0.1:{}/nope.git", daemon.port);
        let (e, m) = msg(fetch(
            &GitSource::parse(&missing).unwrap(),
            &limits(),
            &cache,
        ));
        assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
        assert!(m.contains("nope.git"), "{m}");
        drop(daemon);
    }

    #[test]
    fn git_daemon_download_over_the_archive_limit_is_stopped() {
        let r = Repo::new();
        r.write("skills/a/SKILL.md", A_SKILL);
        // 4 MiB that do not compress (a xorshift stream).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let noise: Vec<u8> = (0..4 * 1024 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        r.write("skills/a/data.bin", &noise);
        r.commit("big");
        let base = r.tmp.path().join("served");
        fs::create_dir_all(&base).unwrap();
        git(
            &r.home(),
            r.tmp.path(),
            &["clone", "-q", "--bare", "origin", "served/big.git"],
        );
        let Some(daemon) = start_daemon(&base, &r.home()) else {
            eprintln!("skipped: git daemon not available");
            return;
        };
        let url = format!("git+git://127.0.0.1:{}/big.git", daemon.port);
        let src = GitSource::parse(&url).unwrap();
        let l = GitLimits {
            archive_bytes: 1024 * 1024,
            ..limits()
        };
        let (e, m) = msg(fetch(&src, &l, &r.cache()));
        match e {
            GitError::Limit {
                limit: "archive_bytes",
                found,
                ..
            } => assert!(found > 1024 * 1024, "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(
            m.contains("bytes packed, over the limit of 1048576 bytes packed"),
            "{m}"
        );
        assert!(
            cache_repos(&r.cache()).is_empty(),
            "the oversized copy is removed"
        );
        // Within the limit, the same repository is read, data and all.
        let f = fetch(&src, &limits(), &r.cache()).unwrap();
        assert_eq!(file(&f.skills[0], "data.bin").bytes, noise);
        drop(daemon);
    }

    #[test]
    fn git_connection_refused_names_the_url() {
        let tmp = tempfile::tempdir().unwrap();
        // A port nobody listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("git://127.0.0.1:{port}/repo.git");
        let src = GitSource::parse(&format!("git+{url}")).unwrap();
        let (e, m) = msg(fetch(&src, &limits(), tmp.path()));
        assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
        assert!(m.contains(&url), "{m}");
    }

    #[test]
    fn git_server_that_never_answers_times_out() {
        let tmp = tempfile::tempdir().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts one connection and says nothing until the test ends.
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut buf = [0u8; 512];
            conn.set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            let _ = conn.read(&mut buf);
        });
        let url = format!("git://127.0.0.1:{port}/repo.git");
        let src = GitSource::parse(&format!("git+{url}")).unwrap();
        let timeouts = Timeouts {
            connect: Duration::from_secs(2),
            io: Duration::from_secs(1),
            overall: Duration::from_secs(30),
        };
        let start = Instant::now();
        let (e, m) = msg(fetch_with(&src, &limits(), tmp.path(), &timeouts));
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "{:?}",
            start.elapsed()
        );
        assert!(matches!(e, GitError::Unreachable { .. }), "{e:?}");
        assert!(m.contains(&url), "{m}");
        drop(server);
    }
}
