//! Reading skills to import: a skill folder, a folder of skills, a SKILL.md, or a zip holding one
//! skill or many.

use crate::error::{Result, StoreError};
use skillbase_format::bundle::read_zip;
use skillbase_format::discover::{Found, discover};
use skillbase_format::signature::Signature;
use skillbase_format::validate::{Profile, ValidateOptions, validate_dir};
use skillbase_format::{Bundle, BundleLimits};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Limits for a whole pack (each skill in it still gets the per-skill limits).
#[derive(Debug, Clone, Copy)]
pub struct PackLimits {
    /// The limits for each skill in the pack.
    pub skill: BundleLimits,
    /// Largest zip file read.
    pub max_zip_bytes: u64,
    /// Most skills in one import.
    pub max_skills: usize,
}

impl Default for PackLimits {
    fn default() -> Self {
        PackLimits {
            skill: BundleLimits::default(),
            max_zip_bytes: 1024 * 1024 * 1024,
            max_skills: 100_000,
        }
    }
}

/// A skill as read, with the signature found beside it (its `SKILL.sig`), parsed but not yet
/// verified (the store verifies it against the bundle at write).
pub type Signed = (Bundle, Option<Signature>);

/// Take a bundle's `SKILL.sig` out of it and parse it; `at` names the skill in errors.
pub fn split_signature(bundle: Bundle, at: &str) -> Result<Signed> {
    let (bundle, sig) = bundle.split_signature();
    let Some(bytes) = sig else {
        return Ok((bundle, None));
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| StoreError::Untrusted(format!("{at}/SKILL.sig is not UTF-8 text")))?;
    let sig = Signature::parse(text)
        .map_err(|e| StoreError::Untrusted(format!("{at}/SKILL.sig: {e}")))?;
    Ok((bundle, Some(sig)))
}

/// The skills found at `src`, each checked as a bundle. Any bad skill fails the whole read.
pub fn read_source(src: &Path, limits: &PackLimits) -> Result<Vec<Bundle>> {
    Ok(read_source_signed(src, limits)?
        .into_iter()
        .map(|(b, _)| b)
        .collect())
}

/// [`read_source`], with each skill's signature (a `SKILL.sig` beside its SKILL.md).
pub fn read_source_signed(src: &Path, limits: &PackLimits) -> Result<Vec<Signed>> {
    let is_zip = src.is_file()
        && src
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zip"));
    if is_zip {
        let f = std::fs::File::open(src).map_err(|source| StoreError::Io {
            path: src.display().to_string(),
            source,
        })?;
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        if size > limits.max_zip_bytes {
            return Err(StoreError::Invalid(format!(
                "{} is {size} bytes, over the {}-byte limit for an import",
                src.display(),
                limits.max_zip_bytes
            )));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        f.take(limits.max_zip_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|source| StoreError::Io {
                path: src.display().to_string(),
                source,
            })?;
        return read_zip_pack_signed(&bytes, limits).map_err(|e| match e {
            StoreError::Untrusted(m) => StoreError::Untrusted(format!("{}: {m}", src.display())),
            e => StoreError::Invalid(format!("{}: {e}", src.display())),
        });
    }
    let dirs = match discover(src) {
        Found::Skills(d) => d,
        Found::NoSkills => {
            return Err(StoreError::Invalid(format!(
                "no skill found at {}: give a skill folder, a folder of skills, a SKILL.md or a .zip",
                src.display()
            )));
        }
        Found::Missing => {
            return Err(StoreError::Invalid(format!(
                "{} does not exist",
                src.display()
            )));
        }
    };
    if dirs.len() > limits.max_skills {
        return Err(StoreError::Invalid(format!(
            "{} holds {} skills, over the limit of {}",
            src.display(),
            dirs.len(),
            limits.max_skills
        )));
    }
    // A skill folder reached through a link must stay inside what was given: a link to a folder
    // elsewhere would import files the operator never pointed at. Refused whole.
    let root = if src.is_file() {
        src.parent().unwrap_or(Path::new("."))
    } else {
        src
    };
    let root = root.canonicalize().map_err(|source| StoreError::Io {
        path: root.display().to_string(),
        source,
    })?;
    for d in &dirs {
        let real = d.canonicalize().map_err(|source| StoreError::Io {
            path: d.display().to_string(),
            source,
        })?;
        if !real.starts_with(&root) {
            return Err(StoreError::Invalid(format!(
                "{} is a link to a folder outside {}; copy the skill in instead of linking it",
                skillbase_format::text::escape_controls(&d.display().to_string()),
                skillbase_format::text::escape_controls(&src.display().to_string()),
            )));
        }
    }
    dirs.iter()
        .map(|d| read_folder_signed(d, &limits.skill))
        .collect()
}

/// One skill folder: loaded as a bundle (links checked before anything is read through them),
/// then validated (the folder name must match `name`).
pub fn read_folder(dir: &Path, limits: &BundleLimits) -> Result<Bundle> {
    read_folder_signed(dir, limits).map(|(b, _)| b)
}

/// [`read_folder`], with the folder's signature (its `SKILL.sig`, not part of the bundle).
pub fn read_folder_signed(dir: &Path, limits: &BundleLimits) -> Result<Signed> {
    let shown = || skillbase_format::text::escape_controls(&dir.display().to_string()).into_owned();
    let bundle = Bundle::from_dir(dir, limits)
        .map_err(|e| StoreError::InvalidSkill(format!("{}: {e}", shown())))?;
    let (bundle, sig) = split_signature(bundle, &shown())?;
    let report = validate_dir(
        dir,
        &ValidateOptions {
            profile: Profile::Skillbase,
            ..ValidateOptions::default()
        },
    );
    if !report.is_valid() {
        // With each fix, as `Store::check_bundle` gives them.
        let msgs: Vec<String> = report
            .errors()
            .map(|d| match &d.hint {
                Some(h) => format!("{} ({h})", d.message),
                None => d.message.clone(),
            })
            .collect();
        return Err(StoreError::InvalidSkill(format!(
            "{}: {}",
            shown(),
            msgs.join("; ")
        )));
    }
    Ok((bundle, sig))
}

/// The skills in zip bytes: SKILL.md at the root (one skill), or one folder per skill, possibly
/// under a single wrapping folder.
pub fn read_zip_pack(bytes: &[u8], limits: &PackLimits) -> Result<Vec<Bundle>> {
    Ok(read_zip_pack_signed(bytes, limits)?
        .into_iter()
        .map(|(b, _)| b)
        .collect())
}

/// [`read_zip_pack`], with each skill's signature (its `SKILL.sig`).
pub fn read_zip_pack_signed(bytes: &[u8], limits: &PackLimits) -> Result<Vec<Signed>> {
    // What one archive may unpack to: proportional to what was sent (at most
    // `MAX_PACK_RATIO` times its size, and never less than one skill's limit), and never more
    // than four times the largest archive accepted.
    let unpacked = (bytes.len() as u64)
        .saturating_mul(MAX_PACK_RATIO)
        .max(limits.skill.max_total_bytes)
        .min(limits.max_zip_bytes.saturating_mul(4));
    let pack_limits = BundleLimits {
        max_files: limits.skill.max_files.saturating_mul(limits.max_skills),
        max_total_bytes: unpacked,
        max_depth: limits.skill.max_depth + 2,
        ..limits.skill
    };
    check_declared(bytes, limits, &pack_limits)?;
    let entries = read_zip(std::io::Cursor::new(bytes), &pack_limits)?;
    if entries
        .iter()
        .any(|(p, _, _)| matches!(p.as_str(), "SKILL.md" | "skill.md"))
    {
        let bundle = Bundle::from_files(
            entries
                .into_iter()
                .map(|(path, data, exec)| file(path, data, exec))
                .collect(),
            &limits.skill,
        )?;
        return Ok(vec![split_signature(bundle, "the archive")?]);
    }
    // Strip one wrapping folder if everything sits under it and it is not itself a skill.
    let mut entries = entries;
    loop {
        let tops: std::collections::BTreeSet<&str> = entries
            .iter()
            .map(|(p, _, _)| p.as_str().split('/').next().unwrap_or(""))
            .collect();
        let single = tops.len() == 1 && entries.iter().all(|(p, _, _)| p.as_str().contains('/'));
        let top_is_skill = entries.iter().any(|(p, _, _)| {
            p.as_str()
                .split_once('/')
                .is_some_and(|(_, rest)| matches!(rest, "SKILL.md" | "skill.md"))
        });
        if single && !top_is_skill {
            entries = entries
                .into_iter()
                .map(|(p, d, e)| {
                    let rest = p
                        .as_str()
                        .split_once('/')
                        .map(|(_, r)| r.to_owned())
                        .unwrap_or_default();
                    Ok((skillbase_format::BundlePath::parse(&rest)?, d, e))
                })
                .collect::<Result<Vec<_>, skillbase_format::BundleError>>()?;
            continue;
        }
        break;
    }
    let mut groups: BTreeMap<String, Vec<skillbase_format::BundleFile>> = BTreeMap::new();
    for (path, data, exec) in entries {
        let Some((top, rest)) = path.as_str().split_once('/') else {
            return Err(StoreError::Invalid(format!(
                "'{path}' sits outside any skill folder in the archive"
            )));
        };
        let inner = skillbase_format::BundlePath::parse(rest)?;
        groups
            .entry(top.to_owned())
            .or_default()
            .push(file(inner, data, exec));
    }
    if groups.len() > limits.max_skills {
        return Err(StoreError::Invalid(format!(
            "the archive holds {} skills, over the limit of {}",
            groups.len(),
            limits.max_skills
        )));
    }
    let mut out = Vec::with_capacity(groups.len());
    for (folder, files) in groups {
        let bundle = Bundle::from_files(files, &limits.skill)
            .map_err(|e| StoreError::InvalidSkill(format!("{folder}/: {e}")))?;
        let (name, _) = crate::store::Store::check_bundle(&bundle)
            .map_err(|e| StoreError::InvalidSkill(format!("{folder}/: {e}")))?;
        if name != folder {
            return Err(StoreError::InvalidSkill(format!(
                "{folder}/ holds a skill named '{name}'; the folder name must equal the skill name"
            )));
        }
        out.push(split_signature(bundle, &folder)?);
    }
    if out.is_empty() {
        return Err(StoreError::Invalid("the archive holds no skill".into()));
    }
    Ok(out)
}

/// Largest ratio of unpacked bytes to archive bytes for a whole pack (each entry separately may
/// reach the bundle limit's ratio). Text skills pack three to five times.
pub const MAX_PACK_RATIO: u64 = 32;

/// Before anything is decompressed: the sizes every entry declares (the reader refuses an entry
/// larger than it declares) summed per skill folder (the folder of each `SKILL.md`) and over the
/// archive, against the per-skill and whole-pack limits. A bomb is refused from its directory,
/// without holding what it would unpack to.
fn check_declared(bytes: &[u8], limits: &PackLimits, pack: &BundleLimits) -> Result<()> {
    let bad = |e: String| StoreError::Invalid(format!("the archive: {e}"));
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| bad(e.to_string()))?;
    if archive.len() > pack.max_files.saturating_mul(4).max(pack.max_files + 64) {
        return Err(bad(format!("{} entries is too many", archive.len())));
    }
    let mut entries: Vec<(String, u64)> = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let f = archive.by_index_raw(i).map_err(|e| bad(e.to_string()))?;
        if !f.is_dir() {
            entries.push((String::from_utf8_lossy(f.name_raw()).into_owned(), f.size()));
        }
    }
    let total: u64 = entries.iter().map(|(_, n)| *n).sum();
    if total > pack.max_total_bytes {
        return Err(StoreError::Invalid(format!(
            "the archive would unpack to {total} bytes, over the {}-byte limit for an archive of {} bytes; split it into smaller imports",
            pack.max_total_bytes,
            bytes.len()
        )));
    }
    let mut roots: Vec<&str> = entries
        .iter()
        .filter_map(|(n, _)| {
            let (dir, file) = n.rsplit_once('/').unwrap_or(("", n.as_str()));
            matches!(file, "SKILL.md" | "skill.md").then_some(dir)
        })
        .collect();
    // Longest first, so an entry counts for the innermost skill folder holding it.
    roots.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let mut per: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    for (name, size) in &entries {
        let Some(root) = roots
            .iter()
            .find(|r| r.is_empty() || name.starts_with(&format!("{r}/")))
        else {
            continue;
        };
        let e = per.entry(root).or_default();
        e.0 += size;
        e.1 += 1;
        if e.0 > limits.skill.max_total_bytes {
            return Err(StoreError::InvalidSkill(format!(
                "{}/: over the {}-byte limit for one skill",
                skillbase_format::text::escape_controls(root),
                limits.skill.max_total_bytes
            )));
        }
        if e.1 > limits.skill.max_files {
            return Err(StoreError::InvalidSkill(format!(
                "{}/: more than {} files in one skill",
                skillbase_format::text::escape_controls(root),
                limits.skill.max_files
            )));
        }
    }
    Ok(())
}

fn file(
    path: skillbase_format::BundlePath,
    data: Vec<u8>,
    executable: bool,
) -> skillbase_format::BundleFile {
    let digest = skillbase_format::Digest::of(&data);
    skillbase_format::BundleFile {
        path,
        bytes: data.into(),
        digest,
        executable,
    }
}

/// [`export`], with the revision's signature written beside its SKILL.md (`SKILL.sig`), so the
/// folder or zip imports again signed.
pub fn export_signed(
    bundle: &Bundle,
    signature: Option<&Signature>,
    name: &str,
    out: &Path,
) -> Result<PathBuf> {
    let Some(sig) = signature else {
        return export(bundle, name, out);
    };
    let mut files = bundle.files().to_vec();
    files.push(file(
        skillbase_format::BundlePath::parse(skillbase_format::bundle::SIGNATURE_FILE)?,
        sig.to_json().into_bytes(),
        false,
    ));
    let limits = BundleLimits {
        max_files: files.len(),
        max_total_bytes: bundle.total_bytes() + skillbase_format::signature::MAX_INPUT_BYTES as u64,
        ..BundleLimits::default()
    };
    export(&Bundle::from_files(files, &limits)?, name, out)
}

/// Write a bundle out: to a folder (created; must not exist or be empty) or a `.zip` file.
pub fn export(bundle: &Bundle, name: &str, out: &Path) -> Result<PathBuf> {
    let io = |source| StoreError::Io {
        path: out.display().to_string(),
        source,
    };
    if out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
    {
        let tmp = out.with_extension("zip.partial");
        let f = std::fs::File::create(&tmp).map_err(io)?;
        let res = bundle.to_zip(f, Some(name)).map(|_| ());
        if let Err(e) = res {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.into());
        }
        std::fs::rename(&tmp, out).map_err(io)?;
        return Ok(out.to_path_buf());
    }
    if out.exists() && std::fs::read_dir(out).map_err(io)?.next().is_some() {
        return Err(StoreError::Invalid(format!(
            "{} exists and is not empty; choose a new folder",
            out.display()
        )));
    }
    bundle.write_to_dir(out)?;
    Ok(out.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Stored entries (no compression), or deflated with `squeeze`.
    fn zip_with(entries: &[(&str, usize)], squeeze: bool) -> Vec<u8> {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default().compression_method(if squeeze {
            zip::CompressionMethod::Deflated
        } else {
            zip::CompressionMethod::Stored
        });
        for (name, size) in entries {
            z.start_file(*name, opts).unwrap();
            if name.ends_with("SKILL.md") {
                let skill = name.trim_end_matches("/SKILL.md");
                write!(
                    z,
                    "---\nname: {skill}\ndescription: A test skill\n---\n\nBody.\n"
                )
                .unwrap();
            } else {
                z.write_all(&vec![b'x'; *size]).unwrap();
            }
        }
        z.finish().unwrap().into_inner()
    }

    fn zip_of(entries: &[(&str, usize)]) -> Vec<u8> {
        zip_with(entries, false)
    }

    #[test]
    fn declared_sizes_bound_each_skill_and_the_whole_archive() {
        let limits = PackLimits {
            skill: BundleLimits {
                max_total_bytes: 100_000,
                max_files: 3,
                ..BundleLimits::default()
            },
            ..PackLimits::default()
        };
        // Within the limits.
        let ok = zip_of(&[("a/SKILL.md", 0), ("a/x.bin", 5_000), ("b/SKILL.md", 0)]);
        assert_eq!(read_zip_pack(&ok, &limits).unwrap().len(), 2);
        // One skill folder declaring more than a skill may hold.
        let big = zip_of(&[("a/SKILL.md", 0), ("a/x.bin", 60_000), ("a/y.bin", 60_000)]);
        let e = read_zip_pack(&big, &limits).unwrap_err().to_string();
        assert!(e.contains("a/: over the 100000-byte limit"), "{e}");
        // Too many files in one folder, nested under a wrapping folder.
        let many = zip_of(&[
            ("w/a/SKILL.md", 0),
            ("w/a/1", 1),
            ("w/a/2", 1),
            ("w/a/3", 1),
        ]);
        let e = read_zip_pack(&many, &limits).unwrap_err().to_string();
        assert!(e.contains("w/a/: more than 3 files"), "{e}");
        // The whole archive: at most MAX_PACK_RATIO times its size (at least one skill's limit).
        let entries: Vec<(String, usize)> = (0..40)
            .flat_map(|i| {
                [
                    (format!("s{i}/SKILL.md"), 0),
                    (format!("s{i}/x.bin"), 90_000),
                ]
            })
            .collect();
        let refs: Vec<(&str, usize)> = entries.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        // (Deflated: each entry's own ratio is never looked at, the whole is refused first.)
        let bytes = zip_with(&refs, true);
        let e = read_zip_pack(&bytes, &limits).unwrap_err().to_string();
        assert!(e.contains("would unpack to"), "{e}");
    }
}
