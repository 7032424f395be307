//! A source of skills to import: a path on this machine (a skill folder, a folder of skills, a
//! SKILL.md or a zip) or a git repository at a reference, read whole into checked bundles with
//! their signatures and where each came from.

use crate::error::SourceError;
use crate::git::{self, Fetched, GitSource};
use crate::limits::Limits;
use skillbase_format::signature::Signature;
use skillbase_format::{Bundle, BundleFile, BundlePath, Digest};
use skillbase_store::pack;
use skillbase_store::{Origin, Store};
use std::collections::BTreeMap;
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
    /// A source as given on the command line: `git+...` is a git source (its spec checked),
    /// anything else a path (not looked at yet).
    pub fn parse(arg: &Path) -> Result<Source, SourceError> {
        match arg.to_str().filter(|t| t.starts_with("git+")) {
            Some(spec) => Ok(Source::Git(GitSource::parse(spec)?)),
            None => Ok(Source::Path(arg.to_path_buf())),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Path(p) => write!(f, "{}", p.display()),
            Source::Git(g) => write!(f, "{g}"),
        }
    }
}

/// One skill read from a source.
#[derive(Debug, Clone)]
pub struct Sourced {
    /// Its files (its `SKILL.sig` taken out).
    pub bundle: Bundle,
    /// The signature found beside its SKILL.md, parsed, verified by the store at write.
    pub signature: Option<Signature>,
    /// Where it came from: what `skillbase lock` records.
    pub origin: Origin,
}

impl Sourced {
    /// The skill's name, when its SKILL.md gives a valid one.
    pub fn name(&self) -> Option<String> {
        Some(Store::check_bundle(&self.bundle).ok()?.0)
    }

    /// What [`Store::import_from`] takes.
    pub fn into_import(self) -> (Bundle, Option<Signature>, Option<Origin>) {
        (self.bundle, self.signature, Some(self.origin))
    }
}

/// What one read of a source found.
#[derive(Debug, Clone)]
pub struct Read {
    /// The skills, all checked.
    pub skills: Vec<Sourced>,
    /// The source as the trust policy names it: a folder's or zip's absolute path, `git+URL`.
    pub source: String,
    /// The git commit read.
    pub commit: Option<String>,
}

impl Read {
    /// The signer of each signed skill, by name.
    pub fn signers(&self) -> BTreeMap<String, String> {
        self.skills
            .iter()
            .filter_map(|s| Some((s.name()?, s.signature.as_ref()?.signer().to_owned())))
            .collect()
    }
}

/// Reads sources under one set of [`Limits`], with remote git repositories cached in one
/// folder (a bare repository per URL).
#[derive(Debug, Clone)]
pub struct Reader {
    limits: Limits,
    git_cache: PathBuf,
}

impl Reader {
    /// A reader under `limits`, caching git repositories under `git_cache`.
    pub fn new(limits: Limits, git_cache: PathBuf) -> Reader {
        Reader { limits, git_cache }
    }

    /// The limits it reads under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Every skill of `source`, all or nothing: one bad skill fails the whole read.
    pub async fn read(&self, source: &Source) -> Result<Read, SourceError> {
        match source {
            Source::Path(p) => {
                let name = p.canonicalize().unwrap_or_else(|_| p.clone());
                let name = name.display().to_string();
                let skills = self.read_path(p, &name)?;
                Ok(Read {
                    skills,
                    source: name,
                    commit: None,
                })
            }
            Source::Git(g) => self.read_git(g).await,
        }
    }

    /// The skills at `path`, each with the origin `source`.
    pub(crate) fn read_path(&self, path: &Path, source: &str) -> Result<Vec<Sourced>, SourceError> {
        let origin = Origin {
            source: source.to_owned(),
            reference: None,
            path: None,
        };
        Ok(pack::read_source_signed(path, &self.limits.pack)?
            .into_iter()
            .map(|(bundle, signature)| Sourced {
                bundle,
                signature,
                origin: origin.clone(),
            })
            .collect())
    }

    /// The skills of a git source: fetched on a blocking thread (a remote repository into its
    /// cache), then each checked as a bundle under the per-skill limits.
    async fn read_git(&self, src: &GitSource) -> Result<Read, SourceError> {
        let fetched = {
            let (src, limits, cache) =
                (src.clone(), self.limits.git.clone(), self.git_cache.clone());
            tokio::task::spawn_blocking(move || git::fetch(&src, &limits, &cache)).await??
        };
        let commit = fetched.commit.clone();
        let skills = git_skills(fetched, src, &self.limits)?;
        Ok(Read {
            skills,
            source: format!("git+{}", src.url),
            commit: Some(commit),
        })
    }
}

/// The skills of a fetched commit as checked bundles, each named `git+URL#folder` in errors; a
/// skill's folder must carry its name.
fn git_skills(
    fetched: Fetched,
    src: &GitSource,
    limits: &Limits,
) -> Result<Vec<Sourced>, SourceError> {
    let mut out = Vec::with_capacity(fetched.skills.len());
    for skill in fetched.skills {
        let at = if skill.dir.is_empty() {
            src.to_spec()
        } else {
            format!("{}#{}", src.url, skill.dir)
        };
        let bundle_err = |source| SourceError::Bundle {
            at: at.clone(),
            source,
        };
        let files = skill
            .files
            .into_iter()
            .map(|f| {
                Ok(BundleFile {
                    path: BundlePath::parse(&f.path)?,
                    digest: Digest::of(&f.bytes),
                    bytes: f.bytes.into(),
                    executable: f.executable,
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(bundle_err)?;
        let bundle = Bundle::from_files(files, &limits.pack.skill).map_err(bundle_err)?;
        let (name, _) = Store::check_bundle(&bundle).map_err(|source| SourceError::Invalid {
            at: at.clone(),
            source,
        })?;
        let folder = skill.dir.rsplit('/').next().unwrap_or_default();
        if !folder.is_empty() && folder != name {
            return Err(SourceError::FolderName { at, name });
        }
        let (bundle, signature) = pack::split_signature(bundle, &at)?;
        out.push(Sourced {
            bundle,
            signature,
            origin: Origin {
                source: format!("git+{}", src.url),
                reference: Some(fetched.commit.clone()),
                path: (!skill.dir.is_empty()).then(|| skill.dir.clone()),
            },
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_prefix_makes_a_git_source_anything_else_a_path() {
        let git = Source::parse(Path::new("git+file:///srv/repo@v1#skills/a")).unwrap();
        let Source::Git(g) = &git else {
            panic!("{git:?}")
        };
        assert_eq!(
            (g.url.as_str(), g.reference.as_deref(), g.subdir.as_deref()),
            ("file:///srv/repo", Some("v1"), Some("skills/a"))
        );
        assert_eq!(git.to_string(), "git+file:///srv/repo@v1#skills/a");
        let path = Source::parse(Path::new("skills/pack.zip")).unwrap();
        assert_eq!(path, Source::Path(PathBuf::from("skills/pack.zip")));
        // A malformed spec is refused before anything is read.
        let e = Source::parse(Path::new("git+ftp://h/r")).unwrap_err();
        assert!(
            e.to_string().contains("scheme `ftp` is not supported"),
            "{e}"
        );
    }
}
