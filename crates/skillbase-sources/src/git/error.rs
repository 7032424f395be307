//! Why a git source could not be read, and gix's errors turned into one line.

use std::path::PathBuf;

/// Why a git source could not be read. Each message says what to change. The fields name what
/// the message quotes: `url` the repository's URL, `detail` gix's causes on one line.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The spec is malformed.
    #[error("invalid git source {spec}: {problem}")]
    Spec {
        /// The spec as given, escaped and cut when long.
        spec: String,
        /// What is wrong and what to write instead.
        problem: String,
    },
    /// The URL's scheme is parsed but cannot be fetched by this build.
    #[error(
        "cannot fetch {url}: {scheme}:// is not supported in this build; use an https://, \
         git:// or ssh:// URL, or clone the repository yourself and use git+file:///path/to/clone"
    )]
    UnsupportedTransport {
        /// The repository's URL.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// Plain `http://` to a host other than this machine.
    #[error(
        "refusing to fetch {url} over plain http://: it would carry the repository (and any \
         credentials) unencrypted; use https:// (plain http is accepted only for 127.0.0.1, ::1 \
         and localhost)"
    )]
    InsecureHttp {
        /// The repository's URL.
        url: String,
    },
    /// The repository could not be reached or read.
    #[error(
        "cannot reach the git repository {url}: {detail}; check the URL, that the repository \
         exists and that the server is running"
    )]
    Unreachable {
        /// The repository's URL.
        url: String,
        /// Why.
        detail: String,
    },
    /// The cache folder could not be used.
    #[error(
        "cannot use the git cache at {}: {detail}; check that the folder is writable, or remove \
         it to start afresh",
        path.display()
    )]
    Cache {
        /// The cache folder, lock file or repository.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The reference names nothing in the repository.
    #[error(
        "the reference `{reference}` is not in {url}: it names no branch, tag or commit there. \
         {available}"
    )]
    RefNotFound {
        /// The `@ref` given.
        reference: String,
        /// The repository's URL.
        url: String,
        /// The branches and tags it has (up to 10).
        available: String,
    },
    /// The reference names more than one thing.
    #[error("the reference `{reference}` is ambiguous in {url}: {detail}")]
    AmbiguousRef {
        /// The `@ref` given.
        reference: String,
        /// The repository's URL.
        url: String,
        /// What it names, and how to write one of them.
        detail: String,
    },
    /// The repository has no HEAD to default to.
    #[error(
        "{url} has no HEAD (an empty repository, or HEAD names a missing branch): name a branch, \
         tag or commit with @REF. {available}"
    )]
    NoHead {
        /// The repository's URL.
        url: String,
        /// The branches and tags it has (up to 10).
        available: String,
    },
    /// The reference resolved to something that is not a commit.
    #[error(
        "the reference `{reference}` in {url} names {what}, not a commit: name a commit, a branch or a tag"
    )]
    NotACommit {
        /// The `@ref` given.
        reference: String,
        /// The repository's URL.
        url: String,
        /// The kind of object it names, and its id.
        what: String,
    },
    /// `#subdir` is missing at the commit, or is not a folder.
    #[error(
        "the folder `{subdir}` is not in {url} at commit {commit} ({detail}); fix #subdir to a \
         folder of that commit"
    )]
    SubdirNotFound {
        /// The `#subdir` given.
        subdir: String,
        /// The repository's URL.
        url: String,
        /// The commit read.
        commit: String,
        /// Which part is missing or not a folder.
        detail: String,
    },
    /// A limit of [`GitLimits`](super::GitLimits) was passed.
    #[error("{subject}: {found} {unit}, over the limit of {max} {unit} {scope} ({limit}); {fix}")]
    Limit {
        /// The limit's field name in [`GitLimits`](super::GitLimits) (or a built-in guard's name).
        limit: &'static str,
        /// What is over it: the repository, a folder of it, or a skill.
        subject: String,
        /// How much was found.
        found: u64,
        /// The limit.
        max: u64,
        /// What is counted.
        unit: &'static str,
        /// Per what the limit counts.
        scope: &'static str,
        /// What to do.
        fix: &'static str,
    },
    /// A skill holds an entry that is not a plain file (a symlink, a submodule, a bad name).
    #[error("{path}: {what} inside a skill folder is refused, and with it the whole import; {fix}")]
    UnsafeEntry {
        /// The entry's path in the repository.
        path: String,
        /// What it is.
        what: &'static str,
        /// What to do.
        fix: &'static str,
    },
    /// No folder with a SKILL.md was found.
    #[error(
        "no skill found in {url} at commit {commit}{where_}: no folder has a SKILL.md; point \
         #subdir at a folder holding a SKILL.md, or pick another @ref"
    )]
    NoSkill {
        /// The repository's URL.
        url: String,
        /// The commit read.
        commit: String,
        /// ` under `#subdir`` when one was given.
        where_: String,
    },
    /// Reading the repository's objects failed (a damaged repository or cache).
    #[error("cannot read {url}: {detail}; if the cache is damaged, remove it and try again")]
    Read {
        /// The repository's URL.
        url: String,
        /// What could not be read, and why.
        detail: String,
    },
}

impl GitError {
    /// What is wrong with a malformed spec ([`GitError::Spec`]'s `problem`).
    pub fn problem(&self) -> Option<&str> {
        match self {
            GitError::Spec { problem, .. } => Some(problem),
            _ => None,
        }
    }

    /// The error with `secret` (a password from the URL, as given and percent-decoded) and any
    /// `user:password@` replaced by `***` in every text it carries.
    pub(crate) fn scrubbed(self, secret: &str) -> GitError {
        let decoded = skillbase_format::uri::decode_segment(secret);
        let scrub = |text: String| {
            let mut text = redact_userinfo(&text);
            for s in [secret, decoded.as_deref().unwrap_or(secret)] {
                if !s.is_empty() {
                    text = text.replace(s, "***");
                }
            }
            text
        };
        match self {
            GitError::Unreachable { url, detail } => GitError::Unreachable {
                url,
                detail: scrub(detail),
            },
            GitError::Read { url, detail } => GitError::Read {
                url,
                detail: scrub(detail),
            },
            GitError::Cache { path, detail } => GitError::Cache {
                path,
                detail: scrub(detail),
            },
            other => other,
        }
    }
}

/// A gix error with its causes, on one line.
pub(super) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
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

/// A [`GitError::Read`] saying what could not be read, with gix's causes.
pub(super) fn read_error(url: &str, what: &str, e: &(dyn std::error::Error + 'static)) -> GitError {
    GitError::Read {
        url: url.to_string(),
        detail: format!("{what}: {}", chain(e)),
    }
}

/// `text` with the password of every `scheme://user:password@` in it replaced by `***`.
pub(crate) fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let authority_end = tail
            .find(['/', '?', '#', ' ', '"', '\''])
            .unwrap_or(tail.len());
        let authority = &tail[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..colon]);
                out.push_str(":***");
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[authority_end..];
    }
    out.push_str(rest);
    out
}
