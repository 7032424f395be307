//! What a read of a source gives (each skill, with its signature and origin) and what reading
//! needs ([`Context`]: the limits, the git cache, the git base), below both the reader and the
//! marketplace reader.

use crate::error::SourceError;
use crate::git::{Fetched, GitSource};
use crate::limits::Limits;
use skillbase_format::signature::Signature;
use skillbase_format::{Bundle, BundleFile, BundlePath, Digest};
use skillbase_store::pack;
use skillbase_store::{Origin, Store};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What reading a source needs.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// The limits every source is read under.
    pub(crate) limits: Limits,
    /// The folder of cached git repositories.
    pub(crate) git_cache: PathBuf,
    /// Where GitHub shorthand and `github` plugins are fetched from, ending in `/`.
    pub(crate) git_base: String,
}

impl Context {
    /// The skills of a folder, SKILL.md or zip at `path`, each with the origin `source`.
    pub(crate) fn read_pack(&self, path: &Path, source: &str) -> Result<Vec<Sourced>, SourceError> {
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
    /// What the read skipped, one line each (a marketplace's plugins without skills).
    pub notes: Vec<String>,
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

/// The skills of a fetched commit as checked bundles, each named `git+URL#folder` in errors; a
/// skill's folder must carry its name.
pub(crate) fn git_skills(
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
