//! Skill bundles: a skill folder held as relative paths, bytes and SHA-256 digests.
//!
//! Loading is all-or-nothing: one unsafe path (absolute, `..`, a link leaving the folder), a
//! case-folding collision or a broken limit rejects the whole bundle with an error that names the
//! file. Zip archives are read in memory and never extracted; sizes are enforced while reading,
//! because the sizes an archive declares are attacker-controlled.

use crate::digest::Digest;
use sha2::{Digest as _, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::{Read, Seek, Write};
use std::path::{Component, Path};
use std::sync::Arc;
use unicode_normalization::UnicodeNormalization;

/// Limits applied while loading a bundle. All configurable; the defaults suit skills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleLimits {
    /// Most files in one bundle (default 512).
    pub max_files: usize,
    /// Most bytes in all files together (default 16 MiB).
    pub max_total_bytes: u64,
    /// Deepest path (number of segments, the file included; default 10).
    pub max_depth: usize,
    /// Highest ratio of a zip entry's size to its compressed size (default 100).
    pub max_compression_ratio: u64,
    /// Longest relative path, in bytes (default 1,024).
    pub max_path_bytes: usize,
}

impl Default for BundleLimits {
    fn default() -> Self {
        BundleLimits {
            max_files: 512,
            max_total_bytes: 16 * 1024 * 1024,
            max_depth: 10,
            max_compression_ratio: 100,
            max_path_bytes: 1024,
        }
    }
}

/// Why a bundle was rejected. Every variant names the offending path when there is one.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A path that [`BundlePath`] refuses (absolute, drive letter, `..`, `.`, empty segment,
    /// backslash, control character, not UTF-8, or longer than
    /// [`BundleLimits::max_path_bytes`]); rename the file.
    #[error("unsafe path '{path}': {reason}")]
    UnsafePath {
        /// The path as given, with control characters escaped for display.
        path: String,
        /// Which rule it broke, as a short phrase.
        reason: &'static str,
    },
    /// A symbolic link on disk whose target resolves outside the skill folder.
    #[error("'{path}' is a link that leaves the skill folder; copy the file in instead")]
    LinkEscapes {
        /// The link's path relative to the skill folder.
        path: String,
    },
    /// A zip entry that is a symbolic link; archives may hold only regular files and folders.
    #[error("'{path}' is a link; links are not allowed in a zip bundle")]
    ZipLink {
        /// The entry's name, with control characters escaped.
        path: String,
    },
    /// The archive names one path twice; refused because readers disagree on which entry wins.
    #[error(
        "the archive holds two entries with the same name; a reader and the store could see different files, so it is refused whole: rebuild the zip with each path once"
    )]
    DuplicateEntry,
    /// A device, socket or FIFO found while walking a folder.
    #[error("'{path}' is not a regular file or folder (device, socket or pipe)")]
    SpecialFile {
        /// The entry's path relative to the skill folder.
        path: String,
    },
    /// Two paths equal once lowercased (or a file and a folder of one name), which would clash
    /// on a case-insensitive file system.
    #[error("'{a}' and '{b}' are the same path when case is ignored; rename one")]
    CaseCollision {
        /// The path seen first.
        a: String,
        /// The path that collides with it.
        b: String,
    },
    /// More files than [`BundleLimits::max_files`].
    #[error("more than {limit} files (reached at '{path}'); a skill bundle holds at most {limit}")]
    TooManyFiles {
        /// The file limit that was exceeded.
        limit: usize,
        /// The first path over the limit.
        path: String,
    },
    /// More bytes in all files together than [`BundleLimits::max_total_bytes`].
    #[error("more than {limit} bytes in total (reached at '{path}')")]
    TooLarge {
        /// The byte limit that was exceeded.
        limit: u64,
        /// The file whose size crossed the limit.
        path: String,
    },
    /// A path with more segments than [`BundleLimits::max_depth`].
    #[error("'{path}' is {depth} levels deep; at most {limit}")]
    TooDeep {
        /// The offending path.
        path: String,
        /// Its number of segments, the file name included.
        depth: usize,
        /// The configured maximum depth.
        limit: usize,
    },
    /// A zip entry that decompresses to more bytes than its header declares: a corrupt or
    /// hostile archive.
    #[error(
        "zip entry '{path}' holds more bytes than it declares ({declared}); the archive is corrupt or hostile"
    )]
    SizeMismatch {
        /// The entry's name, with control characters escaped.
        path: String,
        /// The uncompressed size, in bytes, that the entry declared.
        declared: u64,
    },
    /// A zip entry whose declared size divided by its compressed size exceeds
    /// [`BundleLimits::max_compression_ratio`] (a likely zip bomb).
    #[error("zip entry '{path}' expands {ratio}x (over {limit}x); refusing a possible zip bomb")]
    CompressionRatio {
        /// The entry's name, with control characters escaped.
        path: String,
        /// Declared size over compressed size, rounded down.
        ratio: u64,
        /// The configured maximum ratio.
        limit: u64,
    },
    /// An encrypted zip entry; encrypted archives are not supported.
    #[error("zip entry '{path}' is encrypted; encrypted archives are not supported")]
    Encrypted {
        /// The entry's name, with control characters escaped.
        path: String,
    },
    /// The zip reader or writer failed (not a zip, truncated, unsupported method); holds its
    /// message.
    #[error("not a readable zip archive: {0}")]
    Zip(String),
    /// Neither `SKILL.md` nor `skill.md` at the bundle's root.
    #[error("no SKILL.md at the root of the bundle; a skill folder must contain SKILL.md")]
    NoSkillMd,
    /// Reading or writing a file or folder on disk failed.
    #[error("cannot read '{path}': {source}")]
    Io {
        /// The file or folder, as displayed by the OS.
        path: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// What [`BundlePath::parse`] accepts within the default [`BundleLimits::max_depth`] (10
/// segments), as a regular expression: no drive letter, no `.` or `..` segment, no empty
/// segment, backslash or control character. (The byte limit and NFC are not in it.)
pub const BUNDLE_PATH_PATTERN: &str = r"^(?![A-Za-z]:)(?!(?:[^/]*/)*\.\.?(?:/|$))[^/\\\u0000-\u001f\u007f-\u009f]+(?:/[^/\\\u0000-\u001f\u007f-\u009f]+){0,9}$";

/// A safe relative path inside a bundle: `/`-separated, no empty, `.` or `..` segments, no
/// backslashes, NUL or control characters, Unicode NFC.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct BundlePath(String);

impl BundlePath {
    /// Check a path written with `/` separators.
    pub fn parse(raw: &str) -> Result<BundlePath, BundleError> {
        let bad = |reason| BundleError::UnsafePath {
            path: crate::text::escape_controls(raw).into_owned(),
            reason,
        };
        if raw.is_empty() {
            return Err(bad("empty path"));
        }
        if raw.starts_with('/') || raw.starts_with('\\') {
            return Err(bad("absolute paths are not allowed"));
        }
        if raw.len() >= 2 && raw.as_bytes()[1] == b':' && raw.as_bytes()[0].is_ascii_alphabetic() {
            return Err(bad("drive-letter paths are not allowed"));
        }
        if raw.contains('\\') {
            return Err(bad("backslashes are not allowed; use `/`"));
        }
        if raw.chars().any(|c| c.is_control()) {
            return Err(bad("control characters are not allowed"));
        }
        for seg in raw.split('/') {
            match seg {
                "" => return Err(bad("empty path segment")),
                "." => return Err(bad("`.` segments are not allowed")),
                ".." => return Err(bad("`..` segments are not allowed")),
                _ => {}
            }
        }
        Ok(BundlePath(raw.nfc().collect()))
    }

    /// The path as a `/`-separated, NFC-normalised string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Number of `/`-separated segments, the file name included (`a/b.md` is 2).
    pub fn depth(&self) -> usize {
        self.0.split('/').count()
    }

    /// The key used to detect collisions on case-insensitive file systems.
    fn fold_key(&self) -> String {
        self.0.to_lowercase()
    }
}

impl fmt::Display for BundlePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleFile {
    /// Where the file sits in the skill folder.
    pub path: BundlePath,
    /// The file's content, shared rather than copied when bundles are cloned.
    pub bytes: Arc<[u8]>,
    /// SHA-256 of `bytes`.
    pub digest: Digest,
    /// Whether the file was executable on disk (scripts keep their mode on export).
    pub executable: bool,
}

/// A skill folder as a content-addressed set of files, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    files: Vec<BundleFile>,
    digest: Digest,
    total_bytes: u64,
}

/// The file at a skill's root holding its signature (`skillbase sign`): read beside the skill,
/// never part of its bundle or its digest ([`Bundle::split_signature`]).
pub const SIGNATURE_FILE: &str = "SKILL.sig";

/// Files collected before the whole-bundle checks run.
struct Builder<'a> {
    limits: &'a BundleLimits,
    files: Vec<BundleFile>,
    total: u64,
}

impl<'a> Builder<'a> {
    fn new(limits: &'a BundleLimits) -> Self {
        Builder {
            limits,
            files: Vec::new(),
            total: 0,
        }
    }

    fn check_path(&self, path: &BundlePath) -> Result<(), BundleError> {
        if path.as_str().len() > self.limits.max_path_bytes {
            return Err(BundleError::UnsafePath {
                path: path.to_string(),
                reason: "path too long",
            });
        }
        let depth = path.depth();
        if depth > self.limits.max_depth {
            return Err(BundleError::TooDeep {
                path: path.to_string(),
                depth,
                limit: self.limits.max_depth,
            });
        }
        if self.files.len() >= self.limits.max_files {
            return Err(BundleError::TooManyFiles {
                limit: self.limits.max_files,
                path: path.to_string(),
            });
        }
        Ok(())
    }

    /// Bytes still allowed before the total limit.
    fn remaining(&self) -> u64 {
        self.limits.max_total_bytes.saturating_sub(self.total)
    }

    fn add(
        &mut self,
        path: BundlePath,
        bytes: Vec<u8>,
        executable: bool,
    ) -> Result<(), BundleError> {
        self.check_path(&path)?;
        self.total += bytes.len() as u64;
        if self.total > self.limits.max_total_bytes {
            return Err(BundleError::TooLarge {
                limit: self.limits.max_total_bytes,
                path: path.to_string(),
            });
        }
        let digest = Digest::of(&bytes);
        self.files.push(BundleFile {
            path,
            bytes: bytes.into(),
            digest,
            executable,
        });
        Ok(())
    }

    fn finish(self) -> Result<Bundle, BundleError> {
        Bundle::from_files(self.files, self.limits)
    }
}

impl Bundle {
    /// Build a bundle from files already in memory (paths are checked, limits applied).
    pub fn from_files(
        mut files: Vec<BundleFile>,
        limits: &BundleLimits,
    ) -> Result<Bundle, BundleError> {
        if files.len() > limits.max_files {
            return Err(BundleError::TooManyFiles {
                limit: limits.max_files,
                path: files[limits.max_files].path.to_string(),
            });
        }
        let mut total = 0u64;
        let mut seen: HashMap<String, usize> = HashMap::with_capacity(files.len());
        for (i, f) in files.iter().enumerate() {
            if f.path.as_str().len() > limits.max_path_bytes {
                return Err(BundleError::UnsafePath {
                    path: f.path.to_string(),
                    reason: "path too long",
                });
            }
            let depth = f.path.depth();
            if depth > limits.max_depth {
                return Err(BundleError::TooDeep {
                    path: f.path.to_string(),
                    depth,
                    limit: limits.max_depth,
                });
            }
            total += f.bytes.len() as u64;
            if total > limits.max_total_bytes {
                return Err(BundleError::TooLarge {
                    limit: limits.max_total_bytes,
                    path: f.path.to_string(),
                });
            }
            if let Some(j) = seen.insert(f.path.fold_key(), i) {
                let (a, b) = (files[j].path.to_string(), f.path.to_string());
                return Err(BundleError::CaseCollision { a, b });
            }
        }
        // A file and a folder of the same name cannot both exist on disk. Checked once every
        // file is in `seen`, so the order of the files does not matter (`DOCS` sorts before
        // `SKILL.md`, `docs/x.md` after it).
        for f in &files {
            let depth = f.path.depth();
            let mut prefix = String::new();
            for seg in f.path.as_str().split('/').take(depth - 1) {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(seg);
                if let Some(&j) = seen.get(&prefix.to_lowercase()) {
                    return Err(BundleError::CaseCollision {
                        a: files[j].path.to_string(),
                        b: f.path.to_string(),
                    });
                }
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        if !files
            .iter()
            .any(|f| matches!(f.path.as_str(), "SKILL.md" | "skill.md"))
        {
            return Err(BundleError::NoSkillMd);
        }
        let digest = bundle_digest(&files);
        Ok(Bundle {
            files,
            digest,
            total_bytes: total,
        })
    }

    /// Build a bundle from `(path, bytes)` pairs, checking every path.
    pub fn from_pairs<I, P>(pairs: I, limits: &BundleLimits) -> Result<Bundle, BundleError>
    where
        I: IntoIterator<Item = (P, Vec<u8>)>,
        P: AsRef<str>,
    {
        let mut b = Builder::new(limits);
        for (p, bytes) in pairs {
            let path = BundlePath::parse(p.as_ref())?;
            b.add(path, bytes, false)?;
        }
        b.finish()
    }

    /// A one-file skill: just its SKILL.md.
    pub fn single(skill_md: impl Into<Vec<u8>>) -> Result<Bundle, BundleError> {
        Bundle::from_pairs([("SKILL.md", skill_md.into())], &BundleLimits::default())
    }

    /// Load a skill folder from disk. Links are followed only while they stay inside the folder;
    /// `.git` folders are skipped.
    pub fn from_dir(dir: &Path, limits: &BundleLimits) -> Result<Bundle, BundleError> {
        let root = dir.canonicalize().map_err(|source| BundleError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        if !root.is_dir() {
            return Err(BundleError::Io {
                path: dir.display().to_string(),
                source: std::io::ErrorKind::NotADirectory.into(),
            });
        }
        let mut b = Builder::new(limits);
        walk(&root, &root, "", &mut b)?;
        b.finish()
    }

    /// Load a skill from zip bytes. If the archive holds a single top-level folder containing
    /// SKILL.md, that folder is the skill's root.
    pub fn from_zip(bytes: &[u8], limits: &BundleLimits) -> Result<Bundle, BundleError> {
        let entries = read_zip(std::io::Cursor::new(bytes), limits)?;
        let has_root_skill = entries
            .iter()
            .any(|(p, _, _)| matches!(p.as_str(), "SKILL.md" | "skill.md"));
        let strip = if has_root_skill {
            None
        } else {
            let first = entries
                .first()
                .and_then(|(p, _, _)| p.as_str().split_once('/').map(|(top, _)| top.to_owned()));
            first.filter(|top| {
                entries
                    .iter()
                    .all(|(p, _, _)| p.as_str().starts_with(&format!("{top}/")))
            })
        };
        let mut b = Builder::new(limits);
        for (path, data, exec) in entries {
            let path = match &strip {
                Some(top) => BundlePath::parse(&path.as_str()[top.len() + 1..])?,
                None => path,
            };
            b.add(path, data, exec)?;
        }
        b.finish()
    }

    /// Take the skill's signature file ([`SIGNATURE_FILE`], `SKILL.sig` at the skill's root)
    /// out of the bundle: it signs the other files, so it is not one of them (nor part of the
    /// digest). Every reader of a skill folder, zip or repository calls this before the bundle
    /// is checked, signed, verified or stored. Returns the bundle without it and its bytes.
    pub fn split_signature(self) -> (Bundle, Option<Vec<u8>>) {
        let Ok(i) = self
            .files
            .binary_search_by(|f| f.path.as_str().cmp(SIGNATURE_FILE))
        else {
            return (self, None);
        };
        let mut files = self.files;
        let sig = files.remove(i);
        let total_bytes = files.iter().map(|f| f.bytes.len() as u64).sum();
        let digest = bundle_digest(&files);
        (
            Bundle {
                files,
                digest,
                total_bytes,
            },
            Some(sig.bytes.to_vec()),
        )
    }

    /// The files, sorted by path.
    pub fn files(&self) -> &[BundleFile] {
        &self.files
    }

    /// The file at `path`.
    pub fn get(&self, path: &str) -> Option<&BundleFile> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.files[i])
    }

    /// The skill's SKILL.md (preferring `SKILL.md` over `skill.md`).
    pub fn skill_md(&self) -> &BundleFile {
        self.get("SKILL.md")
            .or_else(|| self.get("skill.md"))
            .expect("a bundle always has a SKILL.md")
    }

    /// The bundle's content digest, written `sha256:<64 lowercase hex>` (README, "The content
    /// digest", is the definition another tool recomputes):
    ///
    /// 1. the files are the bundle's [`BundlePath`]s (relative, `/`-separated, Unicode NFC,
    ///    UTF-8; no control character, `.`/`..` or empty segment), sorted by their UTF-8 bytes;
    /// 2. for each, in that order, the hash takes the path's length in bytes as a u64
    ///    big-endian, the path's bytes, the raw 32-byte SHA-256 of the file's content, and one
    ///    byte `0x01` if the file is executable (any `x` bit of its mode, on disk or in a zip's
    ///    Unix mode) or
    ///    `0x00`;
    /// 3. the digest is the SHA-256 of that byte string.
    ///
    /// Folders are not hashed (only files, so an empty folder changes nothing), nor are
    /// timestamps or other mode bits; a `.git` folder is not part of a bundle.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// Sum of every file's size in bytes (at most [`BundleLimits::max_total_bytes`] when loaded).
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Write the bundle as a zip archive (Deflate), paths under `root/` when given. A file that
    /// would deflate by more than the default [`BundleLimits::max_compression_ratio`] is stored
    /// uncompressed instead, so [`Bundle::from_zip`] always reads the archive back.
    pub fn to_zip<W: Write + Seek>(&self, w: W, root: Option<&str>) -> Result<W, BundleError> {
        let zerr = |e: zip::result::ZipError| BundleError::Zip(e.to_string());
        let max_ratio = BundleLimits::default().max_compression_ratio;
        let mut z = zip::ZipWriter::new(w);
        for f in &self.files {
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .unix_permissions(if f.executable { 0o755 } else { 0o644 });
            let name = match root {
                Some(r) => format!("{r}/{}", f.path),
                None => f.path.to_string(),
            };
            let io = |source| BundleError::Io {
                path: f.path.to_string(),
                source,
            };
            // Deflate into a scratch archive, then copy the compressed entry over as is.
            let mut scratch = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
            scratch.start_file(name.as_str(), opts).map_err(zerr)?;
            scratch.write_all(&f.bytes).map_err(io)?;
            let mut archive = scratch.finish_into_readable().map_err(zerr)?;
            let entry = archive.by_index_raw(0).map_err(zerr)?;
            if entry.size() / entry.compressed_size().max(1) > max_ratio {
                drop(entry);
                let stored = opts.compression_method(zip::CompressionMethod::Stored);
                z.start_file(name, stored).map_err(zerr)?;
                z.write_all(&f.bytes).map_err(io)?;
            } else {
                z.raw_copy_file(entry).map_err(zerr)?;
            }
        }
        z.finish().map_err(zerr)
    }

    /// Write the files under `dir` (created if missing). Paths were checked at load time.
    pub fn write_to_dir(&self, dir: &Path) -> Result<(), BundleError> {
        for f in &self.files {
            let target = dir.join(f.path.as_str());
            let io = |source| BundleError::Io {
                path: f.path.to_string(),
                source,
            };
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(io)?;
            }
            fs::write(&target, &f.bytes).map_err(io)?;
            #[cfg(unix)]
            if f.executable {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).map_err(io)?;
            }
        }
        Ok(())
    }
}

fn bundle_digest(files: &[BundleFile]) -> Digest {
    let mut h = Sha256::new();
    for f in files {
        h.update((f.path.as_str().len() as u64).to_be_bytes());
        h.update(f.path.as_str().as_bytes());
        h.update(f.digest.0);
        h.update([u8::from(f.executable)]);
    }
    Digest(h.finalize().into())
}

fn walk(root: &Path, dir: &Path, prefix: &str, b: &mut Builder<'_>) -> Result<(), BundleError> {
    let io = |path: &str, source| BundleError::Io {
        path: path.to_owned(),
        source,
    };
    let mut entries: Vec<_> = fs::read_dir(dir)
        .map_err(|e| io(prefix, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| io(prefix, e))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_str().ok_or_else(|| BundleError::UnsafePath {
            path: format!("{prefix}{}", name.to_string_lossy()),
            reason: "file names must be valid UTF-8",
        })?;
        if name == ".git" {
            continue;
        }
        let rel = format!("{prefix}{name}");
        let path = BundlePath::parse(&rel)?;
        if path.depth() > b.limits.max_depth {
            return Err(BundleError::TooDeep {
                path: rel,
                depth: path.depth(),
                limit: b.limits.max_depth,
            });
        }
        let full = entry.path();
        let mut meta = fs::symlink_metadata(&full).map_err(|e| io(&rel, e))?;
        if meta.file_type().is_symlink() {
            let target = full
                .canonicalize()
                .map_err(|_| BundleError::LinkEscapes { path: rel.clone() })?;
            if !target.starts_with(root) {
                return Err(BundleError::LinkEscapes { path: rel });
            }
            meta = fs::metadata(&target).map_err(|e| io(&rel, e))?;
        }
        if meta.is_dir() {
            walk(root, &full, &format!("{rel}/"), b)?;
        } else if meta.is_file() {
            b.check_path(&path)?;
            if meta.len() > b.remaining() {
                return Err(BundleError::TooLarge {
                    limit: b.limits.max_total_bytes,
                    path: rel,
                });
            }
            let f = fs::File::open(&full).map_err(|e| io(&rel, e))?;
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            f.take(b.remaining() + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| io(&rel, e))?;
            b.add(path, bytes, is_executable(&meta))?;
        } else {
            return Err(BundleError::SpecialFile { path: rel });
        }
    }
    Ok(())
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &fs::Metadata) -> bool {
    false
}

/// Read and check every file entry of a zip archive in memory: `(path, bytes, executable)`,
/// in archive order. Directories are skipped; links, encrypted entries, unsafe names, lying sizes
/// and extreme compression ratios reject the whole archive.
pub fn read_zip<R: Read + Seek>(
    reader: R,
    limits: &BundleLimits,
) -> Result<Vec<(BundlePath, Vec<u8>, bool)>, BundleError> {
    let mut archive = open_zip(reader, limits)?;
    let mut out: Vec<(BundlePath, Vec<u8>, bool)> = Vec::new();
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut f = archive
            .by_index(i)
            .map_err(|e| BundleError::Zip(e.to_string()))?;
        let raw = String::from_utf8_lossy(f.name_raw()).into_owned();
        // Escaped for messages: a hostile name must not carry terminal escapes to an operator.
        let raw_name = crate::text::escape_controls(&raw).into_owned();
        let Some(path) = zip_entry_path(&f, &raw, &raw_name)? else {
            continue;
        };
        check_zip_entry_limits(&f, &path, &raw_name, out.len(), total, limits)?;
        let data = read_zip_entry(&mut f, &raw_name)?;
        total += data.len() as u64;
        let exec = f.unix_mode().is_some_and(|m| m & 0o111 != 0);
        out.push((path, data, exec));
    }
    Ok(out)
}

/// Open the archive and refuse it whole if two entries share a name or it has far more entries
/// than the limit on files allows.
fn open_zip<R: Read + Seek>(
    reader: R,
    limits: &BundleLimits,
) -> Result<zip::ZipArchive<R>, BundleError> {
    let archive = zip::ZipArchive::new(reader).map_err(|e| BundleError::Zip(e.to_string()))?;
    // The archive's name index keeps the last of two entries with one name; unzip tools keep
    // the first or ask. Refused whole, naming the path.
    if archive.has_duplicate_names() {
        return Err(BundleError::DuplicateEntry);
    }
    // Directory entries are not files, but an archive with far more entries than allowed files
    // is refused before reading anything.
    if archive.len()
        > limits
            .max_files
            .saturating_mul(4)
            .max(limits.max_files + 64)
    {
        let path = archive
            .name_for_index(limits.max_files)
            .and_then(Result::ok)
            .map(|n| n.into_owned())
            .unwrap_or_default();
        return Err(BundleError::TooManyFiles {
            limit: limits.max_files,
            path,
        });
    }
    Ok(archive)
}

/// The bundle path of a zip entry, or `None` for a directory (whose name is still checked).
/// Encrypted entries, links, names that are not UTF-8, unsafe names and names leaving the
/// archive root are refused. `raw` is the entry's name, `raw_name` the same escaped for messages.
fn zip_entry_path<R: Read + ?Sized>(
    f: &zip::read::ZipFile<'_, R>,
    raw: &str,
    raw_name: &str,
) -> Result<Option<BundlePath>, BundleError> {
    if f.encrypted() {
        return Err(BundleError::Encrypted {
            path: raw_name.to_owned(),
        });
    }
    if f.is_symlink() {
        return Err(BundleError::ZipLink {
            path: raw_name.to_owned(),
        });
    }
    if f.is_dir() {
        let trimmed = raw.trim_end_matches('/');
        if !trimmed.is_empty() {
            BundlePath::parse(trimmed)?;
        }
        return Ok(None);
    }
    if std::str::from_utf8(f.name_raw()).is_err() {
        return Err(BundleError::UnsafePath {
            path: raw_name.to_owned(),
            reason: "entry names must be valid UTF-8",
        });
    }
    let path = BundlePath::parse(raw)?;
    if f.enclosed_name().is_none() {
        return Err(BundleError::UnsafePath {
            path: raw_name.to_owned(),
            reason: "the name leaves the archive root",
        });
    }
    Ok(Some(path))
}

/// The limits a file entry must meet before it is read: the count of files (`files` read so
/// far), the depth of its path, its compression ratio, and its declared size against what is
/// left of the total (`total` bytes read so far).
fn check_zip_entry_limits<R: Read + ?Sized>(
    f: &zip::read::ZipFile<'_, R>,
    path: &BundlePath,
    raw_name: &str,
    files: usize,
    total: u64,
    limits: &BundleLimits,
) -> Result<(), BundleError> {
    if files >= limits.max_files {
        return Err(BundleError::TooManyFiles {
            limit: limits.max_files,
            path: raw_name.to_owned(),
        });
    }
    if path.depth() > limits.max_depth {
        return Err(BundleError::TooDeep {
            path: raw_name.to_owned(),
            depth: path.depth(),
            limit: limits.max_depth,
        });
    }
    let declared = f.size();
    let compressed = f.compressed_size().max(1);
    let ratio = declared / compressed;
    if ratio > limits.max_compression_ratio {
        return Err(BundleError::CompressionRatio {
            path: raw_name.to_owned(),
            ratio,
            limit: limits.max_compression_ratio,
        });
    }
    let remaining = limits.max_total_bytes.saturating_sub(total);
    if declared > remaining {
        return Err(BundleError::TooLarge {
            limit: limits.max_total_bytes,
            path: raw_name.to_owned(),
        });
    }
    Ok(())
}

/// An entry's bytes, read up to one byte past its declared size: an entry longer than it
/// declares is refused, whichever way the reader notices.
fn read_zip_entry<R: Read + ?Sized>(
    f: &mut zip::read::ZipFile<'_, R>,
    raw_name: &str,
) -> Result<Vec<u8>, BundleError> {
    let declared = f.size();
    let mut data = Vec::with_capacity(declared as usize);
    let read = match f.by_ref().take(declared + 1).read_to_end(&mut data) {
        Ok(n) => n,
        // The zip crate stops an entry at its declared size with this error.
        Err(e) if e.to_string().contains("larger than its declared") => {
            return Err(BundleError::SizeMismatch {
                path: raw_name.to_owned(),
                declared,
            });
        }
        Err(e) => return Err(BundleError::Zip(format!("entry '{raw_name}': {e}"))),
    };
    if read as u64 > declared {
        return Err(BundleError::SizeMismatch {
            path: raw_name.to_owned(),
            declared,
        });
    }
    Ok(data)
}

/// Turn an OS path relative to a skill folder into a bundle path (for callers walking folders).
pub fn relative_bundle_path(rel: &Path) -> Result<BundlePath, BundleError> {
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => {
                parts.push(s.to_str().ok_or_else(|| BundleError::UnsafePath {
                    path: rel.display().to_string(),
                    reason: "file names must be valid UTF-8",
                })?)
            }
            Component::CurDir => {}
            _ => {
                return Err(BundleError::UnsafePath {
                    path: rel.display().to_string(),
                    reason: "absolute or `..` paths are not allowed",
                });
            }
        }
    }
    BundlePath::parse(&parts.join("/"))
}

#[cfg(test)]
mod path_pattern_tests {
    use super::{BUNDLE_PATH_PATTERN, BundleLimits, BundlePath};

    /// The pattern accepts exactly the paths `BundlePath::parse` accepts within the default
    /// depth.
    #[test]
    fn the_pattern_is_the_parser() {
        let schema = serde_json::json!({"type": "string", "pattern": BUNDLE_PATH_PATTERN});
        let v = jsonschema::validator_for(&schema).unwrap();
        for p in [
            "SKILL.md",
            "references/REFERENCE.md",
            "a/b/c/d/e/f/g/h/i/j",
            "a/b/c/d/e/f/g/h/i/j/k",
            ".hidden",
            "..x",
            "x..",
            "a/...",
            "é/ü.md",
            "",
            "/abs",
            "\\abs",
            "a\\b",
            "C:x",
            "c:/x",
            "1:x",
            ".",
            "..",
            "a/./b",
            "a/../b",
            "a/..",
            "a//b",
            "a/",
            "tab\tx",
            "c1\u{85}",
        ] {
            let parsed =
                BundlePath::parse(p).is_ok_and(|b| b.depth() <= BundleLimits::default().max_depth);
            assert_eq!(v.is_valid(&serde_json::json!(p)), parsed, "{p:?}");
        }
    }
}
