//! A source of skills to import: a path on this machine (a skill folder, a folder of skills, a
//! SKILL.md or a zip) or a git repository at a reference, read whole into checked bundles with
//! their signatures and where each came from.

use crate::error::SourceError;
use crate::git::{self, GitSource};
use crate::limits::Limits;
use crate::marketplace;
use crate::sourced::{Context, Read, Sourced, git_skills};
use std::fmt;
use std::path::{Path, PathBuf};

/// Where skills are imported from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A skill folder, a folder of skills, a SKILL.md, or a zip of one skill or many: read by
    /// the store's pack reader, which the seed folders and the server's uploads share.
    Path(PathBuf),
    /// `git+URL[@ref][#subdir]`.
    Git(GitSource),
}

impl Source {
    /// A source as given on the command line:
    ///
    /// 1. `git+URL[@ref][#subdir]` is a git source (its spec checked);
    /// 2. a path that exists is that path (a folder, a SKILL.md, a zip, a marketplace);
    /// 3. `OWNER/REPO[/PATH][@REF]` is GitHub shorthand, the repository `OWNER/REPO.git` under
    ///    `git_base` (`https://github.com/` by default) at `REF`, folder `PATH`: an owner of
    ///    letters, digits and `-`, a repository of letters, digits, `-`, `_`, `.`, neither
    ///    starting with `-` or `.`; a text starting with `.`, `/` or `~`, holding `:` or `\`,
    ///    or ending `.zip` or `.md` is never shorthand (write `./owner/repo` for a folder);
    /// 4. anything else is a path (which does not exist: reading it says so).
    pub fn parse(arg: &Path, git_base: &str) -> Result<Source, SourceError> {
        let Some(text) = arg.to_str() else {
            return Ok(Source::Path(arg.to_path_buf()));
        };
        if text.starts_with("git+") {
            return Ok(Source::Git(GitSource::parse(text)?));
        }
        if arg.exists() || arg.symlink_metadata().is_ok() {
            return Ok(Source::Path(arg.to_path_buf()));
        }
        match shorthand(text, git_base) {
            Some(spec) => Ok(Source::Git(GitSource::parse(&spec).map_err(|e| {
                crate::git::GitError::Spec {
                    spec: crate::git::shown(text),
                    problem: format!(
                        "read as GitHub shorthand OWNER/REPO[/PATH][@REF] (no such local path \
                         exists): {}",
                        e.problem().unwrap_or_default()
                    ),
                }
            })?)),
            None => Ok(Source::Path(arg.to_path_buf())),
        }
    }
}

/// `OWNER/REPO[/PATH][@REF]` as the spec `git+BASE/OWNER/REPO.git[@REF][#PATH]`, when `text`
/// has that shape (see [`Source::parse`]).
fn shorthand(text: &str, git_base: &str) -> Option<String> {
    if text.starts_with(['.', '/', '~'])
        || text.contains([':', '\\'])
        || text.ends_with(".zip")
        || text.ends_with(".md")
        || text.len() > crate::git::MAX_SPEC_BYTES
    {
        return None;
    }
    let (path, reference) = match text.rsplit_once('@') {
        Some((p, r)) => (p, Some(r)),
        None => (text, None),
    };
    let mut parts = path.splitn(3, '/');
    let (owner, repo, sub) = (parts.next()?, parts.next()?, parts.next());
    if !crate::marketplace::is_owner(owner) || !crate::marketplace::is_repo(repo) {
        return None;
    }
    let mut spec = format!(
        "git+{}",
        crate::marketplace::github_url(&format!("{owner}/{repo}"), git_base).ok()?
    );
    if let Some(r) = reference {
        spec.push('@');
        spec.push_str(r);
    }
    if let Some(d) = sub {
        spec.push('#');
        spec.push_str(d);
    }
    Some(spec)
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Path(p) => write!(f, "{}", p.display()),
            Source::Git(g) => write!(f, "{g}"),
        }
    }
}

/// Reads sources under one set of [`Limits`], with remote git repositories cached in one
/// folder (a bare repository per URL).
#[derive(Debug, Clone)]
pub struct Reader {
    cx: Context,
}

/// Where GitHub shorthand (`owner/repo`) and a marketplace's `github` plugins are fetched from,
/// unless [`Reader::with_git_base`] says otherwise.
pub const DEFAULT_GIT_BASE: &str = "https://github.com/";

impl Reader {
    /// A reader under `limits`, caching git repositories under `git_cache`.
    pub fn new(limits: Limits, git_cache: PathBuf) -> Reader {
        Reader {
            cx: Context {
                limits,
                git_cache,
                git_base: DEFAULT_GIT_BASE.to_string(),
            },
        }
    }

    /// The reader, fetching GitHub shorthand and `github` plugins from `base` (a URL such as
    /// `https://git.example.com/mirror/`) instead of [`DEFAULT_GIT_BASE`].
    pub fn with_git_base(mut self, base: &str) -> Result<Reader, SourceError> {
        let base = format!("{}/", base.trim_end_matches('/'));
        GitSource::parse(&format!("git+{base}owner/repo.git")).map_err(|e| {
            crate::git::GitError::Spec {
                spec: crate::git::shown(&base),
                problem: format!(
                    "not usable as the git base for owner/repo ({}); write a URL such as \
                     https://github.com/",
                    e.problem().unwrap_or_default()
                ),
            }
        })?;
        self.cx.git_base = base;
        Ok(self)
    }

    /// Where GitHub shorthand is fetched from.
    pub fn git_base(&self) -> &str {
        &self.cx.git_base
    }

    /// The limits it reads under.
    pub fn limits(&self) -> &Limits {
        &self.cx.limits
    }

    /// Every skill of `source`, all or nothing: one bad skill fails the whole read.
    pub async fn read(&self, source: &Source) -> Result<Read, SourceError> {
        self.read_plugins(source, &[]).await
    }

    /// [`Reader::read`], of a plugin marketplace only the plugins named in `plugins` (all when
    /// empty); naming plugins of a source that is not a marketplace is refused.
    pub async fn read_plugins(
        &self,
        source: &Source,
        plugins: &[String],
    ) -> Result<Read, SourceError> {
        let cx = self.cx.clone();
        let plugins = plugins.to_vec();
        match source {
            Source::Path(p) if marketplace::is_marketplace(p) => {
                let p = p.clone();
                tokio::task::spawn_blocking(move || {
                    marketplace::read_local(&cx, &p, &plugins, true)
                })
                .await?
            }
            Source::Path(p) => {
                if !plugins.is_empty() {
                    return Err(not_a_marketplace(&p.display().to_string()));
                }
                let name = p.canonicalize().unwrap_or_else(|_| p.clone());
                let name = name.display().to_string();
                let skills = self.cx.read_pack(p, &name)?;
                Ok(Read {
                    skills,
                    source: name,
                    commit: None,
                    notes: Vec::new(),
                })
            }
            Source::Git(g) => {
                let g = g.clone();
                tokio::task::spawn_blocking(move || read_git(&cx, &g, &plugins)).await?
            }
        }
    }

    /// The skills at `path`, each with the origin `source`; a marketplace's own plugins' skills
    /// when `path` is one (what the lockfile re-reads).
    pub(crate) fn read_path(&self, path: &Path, source: &str) -> Result<Vec<Sourced>, SourceError> {
        if marketplace::is_marketplace(path) {
            return Ok(marketplace::read_local(&self.cx, path, &[], false)?.skills);
        }
        self.cx.read_pack(path, source)
    }
}

/// The skills of a git source (a remote repository fetched into its cache), each checked as a
/// bundle under the per-skill limits; a marketplace's, when its folder holds one. Blocking.
fn read_git(cx: &Context, src: &GitSource, plugins: &[String]) -> Result<Read, SourceError> {
    let opened = git::open(src, &cx.limits.git, &cx.git_cache)?;
    let manifest = match &src.subdir {
        Some(d) => format!("{d}/{}", marketplace::MANIFEST),
        None => marketplace::MANIFEST.to_string(),
    };
    if let Some(bytes) = opened.read_file(&manifest, marketplace::MAX_MANIFEST_BYTES)? {
        return marketplace::read_in_git(cx, &opened, src, &bytes, plugins);
    }
    if !plugins.is_empty() {
        return Err(not_a_marketplace(&src.to_spec()));
    }
    let fetched = opened.read(src.subdir.as_deref(), &cx.limits.git)?;
    let commit = fetched.commit.clone();
    let skills = git_skills(fetched, src, &cx.limits)?;
    Ok(Read {
        skills,
        source: format!("git+{}", src.url),
        commit: Some(commit),
        notes: Vec::new(),
    })
}

/// `--plugin` given for a source that is not a marketplace.
fn not_a_marketplace(at: &str) -> SourceError {
    SourceError::Marketplace {
        at: at.to_string(),
        problem: format!(
            "is not a plugin marketplace (it has no {}); name plugins only of a marketplace",
            marketplace::MANIFEST
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_prefix_makes_a_git_source_anything_else_a_path() {
        let git = Source::parse(
            Path::new("git+file:///srv/repo@v1#skills/a"),
            DEFAULT_GIT_BASE,
        )
        .unwrap();
        let Source::Git(g) = &git else {
            panic!("{git:?}")
        };
        assert_eq!(
            (g.url.as_str(), g.reference.as_deref(), g.subdir.as_deref()),
            ("file:///srv/repo", Some("v1"), Some("skills/a"))
        );
        assert_eq!(git.to_string(), "git+file:///srv/repo@v1#skills/a");
        let path = Source::parse(Path::new("skills/pack.zip"), DEFAULT_GIT_BASE).unwrap();
        assert_eq!(path, Source::Path(PathBuf::from("skills/pack.zip")));
        // A malformed spec is refused before anything is read.
        let e = Source::parse(Path::new("git+ftp://h/r"), DEFAULT_GIT_BASE).unwrap_err();
        assert!(
            e.to_string().contains("scheme `ftp` is not supported"),
            "{e}"
        );
    }

    #[test]
    fn shorthand_is_github_unless_a_path_exists_or_it_cannot_be_shorthand() {
        let base = "https://git.example/";
        let spec = |t: &str| match Source::parse(Path::new(t), base) {
            Ok(Source::Git(g)) => g.to_spec(),
            other => panic!("{t}: {other:?}"),
        };
        assert_eq!(spec("owner/repo"), "git+https://git.example/owner/repo.git");
        assert_eq!(
            spec("owner/repo.git@v1"),
            "git+https://git.example/owner/repo.git@v1"
        );
        assert_eq!(
            spec("o-1/r_2.x/skills/pdf@feature/x"),
            "git+https://git.example/o-1/r_2.x.git@feature/x#skills/pdf"
        );
        let Source::Git(g) =
            Source::parse(Path::new("anthropics/skills"), DEFAULT_GIT_BASE).unwrap()
        else {
            panic!("not git")
        };
        assert_eq!(g.url, "https://github.com/anthropics/skills.git");
        // A path that exists wins (tests run in the crate's folder, which has src/git).
        assert_eq!(
            Source::parse(Path::new("src/git"), base).unwrap(),
            Source::Path(PathBuf::from("src/git"))
        );
        // Never shorthand: these are paths (which do not exist).
        for path in [
            "./owner/repo",
            "../x/y",
            "/abs/x",
            "~/x/y",
            "-rf/x",
            "owner",
            "a:b/c",
            "owner/repo/pack.zip",
            "owner/repo/SKILL.md",
            "owner/.repo",
            "owner/re po",
            "own.er/repo",
        ] {
            assert_eq!(
                Source::parse(Path::new(path), base).unwrap(),
                Source::Path(PathBuf::from(path)),
                "{path}"
            );
        }
        // Shorthand whose reference or folder is hostile or malformed: refused, never a path,
        // never an option.
        for (text, expected) in [
            ("owner/repo@--upload-pack=touch%20x", "starts with `-`"),
            ("owner/repo@-c", "starts with `-`"),
            ("owner/repo/../../etc", "contains `..`"),
            ("owner/repo/.git/hooks", "goes into `.git`"),
            ("owner/repo@a..b", "not a valid git reference"),
            ("owner/repo@", "is empty"),
        ] {
            let e = Source::parse(Path::new(text), base)
                .unwrap_err()
                .to_string();
            assert!(e.contains("read as GitHub shorthand"), "{text}: {e}");
            assert!(e.contains(expected), "{text}: {e}");
        }
    }

    #[test]
    fn the_git_base_must_be_a_usable_url() {
        let r = Reader::new(Limits::default(), PathBuf::from("/nonexistent"));
        assert_eq!(r.git_base(), DEFAULT_GIT_BASE);
        let r = r.with_git_base("http://127.0.0.1:8080/mirror").unwrap();
        assert_eq!(r.git_base(), "http://127.0.0.1:8080/mirror/");
        for bad in ["ftp://h/", "github.com", "", "https://u:pw@h.example/ x"] {
            let e = Reader::new(Limits::default(), PathBuf::from("/x"))
                .with_git_base(bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("not usable as the git base"), "{bad}: {e}");
            assert!(!e.contains(":pw@"), "{e}");
        }
    }
}
