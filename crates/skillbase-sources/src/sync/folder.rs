//! The file operations of `sync`, confined to one skills folder: nothing outside it is written,
//! removed or followed. Links are never followed (every entry is looked at with
//! `symlink_metadata`, a file is read only when the file opened is the entry looked at); a skill
//! is written into a temporary folder inside the skills folder and renamed into place, the old
//! copy renamed aside first and removed last, so a skill is always whole, old or new.

use super::SyncError;
use skillbase_format::{Bundle, BundleFile, BundleLimits, BundlePath, Digest};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What every temporary entry `sync` makes in a skills folder starts with (a skill name never
/// starts with a dot).
pub const TEMP_PREFIX: &str = ".skillbase-sync-";
/// A skill being written.
const TMP: &str = ".skillbase-sync-tmp-";
/// An old copy renamed aside (followed by the skill's name).
const OLD: &str = ".skillbase-sync-old-";
/// The manifest being written.
const MANIFEST_TMP: &str = ".skillbase-sync-manifest-tmp-";

/// The lock file a running sync holds (an exclusive advisory lock); left in place, so that two
/// syncs always lock the same file. Not a temporary entry: recovery never removes it.
pub const LOCK: &str = ".skillbase-sync.lock";

/// Temporary names made by this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SyncError + '_ {
    move |source| SyncError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether `name` can be a skill folder here: a valid, canonical skill name and one plain path
/// segment (the store only holds such names; checked again because a manifest is input).
pub fn check_skill_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name == "." || name == ".." {
        return Err("which is not a folder name");
    }
    if name.starts_with('.') {
        return Err("which starts with a dot");
    }
    if name
        .chars()
        .any(|c| c == '/' || c == '\\' || c.is_control())
    {
        return Err("which is a path, not a folder name");
    }
    if skillbase_format::SkillName::parse_canonical(name).is_err() {
        return Err("which is not a skill name");
    }
    Ok(())
}

/// One entry directly in the skills folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A real folder.
    Folder,
    /// A link (to where it points; never followed).
    Link(PathBuf),
    /// A file or anything else.
    Other,
}

/// The skills folder `rel` under `root`, each folder from `root` down checked to be a real
/// folder, not a link; created when `create` (else `None` when one is missing). `root` is
/// the project or home folder the person named and must exist.
pub fn skills_folder(
    root: &Path,
    rel: &[&str],
    create: bool,
) -> Result<Option<PathBuf>, SyncError> {
    let root = root.canonicalize().map_err(|e| SyncError::Root {
        path: root.to_path_buf(),
        problem: e.to_string(),
    })?;
    if !root.is_dir() {
        return Err(SyncError::Root {
            path: root,
            problem: "is not a folder".into(),
        });
    }
    let mut p = root;
    for seg in rel {
        p.push(seg);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(SyncError::LinkRefused {
                    to: std::fs::read_link(&p).unwrap_or_default(),
                    path: p,
                });
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(SyncError::NotAFolder { path: p }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !create {
                    return Ok(None);
                }
                std::fs::create_dir(&p).map_err(io_err(&p))?;
                let m = std::fs::symlink_metadata(&p).map_err(io_err(&p))?;
                if !m.is_dir() || m.file_type().is_symlink() {
                    return Err(SyncError::NotAFolder { path: p });
                }
            }
            Err(e) => return Err(SyncError::Io { path: p, source: e }),
        }
    }
    Ok(Some(p))
}

/// The entries of the skills folder that could be a skill folder: UTF-8 names not starting with
/// a dot (no skill name does; sync's manifest and temporary entries do).
pub fn entries(folder: &Path) -> Result<Vec<(String, Kind)>, SyncError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(io_err(folder))? {
        let entry = entry.map_err(io_err(folder))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        out.push((name, kind_of(&entry.path())?));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// What the entry at `path` is, without following it.
pub fn kind_of(path: &Path) -> Result<Kind, SyncError> {
    let m = std::fs::symlink_metadata(path).map_err(io_err(path))?;
    Ok(if m.file_type().is_symlink() {
        Kind::Link(std::fs::read_link(path).unwrap_or_default())
    } else if m.is_dir() {
        Kind::Folder
    } else {
        Kind::Other
    })
}

/// Read a plain file of at most `max` bytes: refused when it is a link or anything but a file,
/// or when what was opened is not the entry looked at (swapped in between).
pub fn read_plain_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind};
    let before = std::fs::symlink_metadata(path)?;
    if !before.file_type().is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a plain file"));
    }
    let f = std::fs::File::open(path)?;
    let after = f.metadata()?;
    if !same_file(&before, &after) {
        return Err(Error::new(ErrorKind::InvalidInput, "changed while read"));
    }
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("over {max} bytes"),
        ));
    }
    Ok(bytes)
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino() && b.is_file()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    b.is_file()
}

#[cfg(unix)]
fn is_executable(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_: &std::fs::Metadata) -> bool {
    false
}

/// The content digest of the skill folder `dir` as the store defines it (`.git` and the root
/// `SKILL.sig` excepted), or why it has none: a link anywhere in it (never followed), a
/// special file, an unsafe name, or more than `limits` allow.
pub fn folder_digest(dir: &Path, limits: &BundleLimits) -> Result<Digest, String> {
    let mut files = Vec::new();
    let mut total = 0u64;
    walk(dir, "", limits, &mut files, &mut total)?;
    Bundle::from_files(files, limits)
        .map(|b| b.digest())
        .map_err(|e| e.to_string())
}

fn walk(
    dir: &Path,
    prefix: &str,
    limits: &BundleLimits,
    files: &mut Vec<BundleFile>,
    total: &mut u64,
) -> Result<(), String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("{prefix}: {e}"))?;
    for entry in rd {
        let entry = entry.map_err(|e| format!("{prefix}: {e}"))?;
        let name = entry.file_name();
        let name = name
            .to_str()
            .ok_or_else(|| format!("{prefix}{}: not a UTF-8 name", name.to_string_lossy()))?;
        if name == ".git" || (prefix.is_empty() && name == skillbase_format::bundle::SIGNATURE_FILE)
        {
            continue;
        }
        let rel = format!("{prefix}{name}");
        let path = BundlePath::parse(&rel).map_err(|e| e.to_string())?;
        if path.depth() > limits.max_depth || files.len() >= limits.max_files {
            return Err(format!("{rel}: more than this skill folder may hold"));
        }
        let full = entry.path();
        let m = std::fs::symlink_metadata(&full).map_err(|e| format!("{rel}: {e}"))?;
        if m.file_type().is_symlink() {
            return Err(format!("{rel} is a link (not followed)"));
        } else if m.is_dir() {
            walk(&full, &format!("{rel}/"), limits, files, total)?;
        } else if m.is_file() {
            let left = limits.max_total_bytes.saturating_sub(*total);
            let bytes = read_plain_file(&full, left).map_err(|e| format!("{rel}: {e}"))?;
            *total += bytes.len() as u64;
            files.push(BundleFile {
                path,
                digest: Digest::of(&bytes),
                bytes: bytes.into(),
                executable: is_executable(&m),
            });
        } else {
            return Err(format!("{rel} is not a file or a folder"));
        }
    }
    Ok(())
}

/// A fresh temporary name in `folder` (never an existing entry: created with `create_dir`).
fn temp_name(kind: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{kind}{}-{n}", std::process::id())
}

/// Write `bundle` as the skill folder `name` in `folder`: into a temporary folder, then
/// renamed into place; an existing copy (a real folder, checked by the caller) is renamed aside
/// first and removed once the new one is in.
pub fn write_skill(folder: &Path, name: &str, bundle: &Bundle) -> Result<(), SyncError> {
    check_skill_name(name).map_err(|why| SyncError::BadName {
        name: name.to_owned(),
        why,
    })?;
    let tmp = folder.join(temp_name(TMP));
    std::fs::create_dir(&tmp).map_err(io_err(&tmp))?;
    if let Err(e) = write_files(&tmp, bundle) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let target = folder.join(name);
    let aside = folder.join(format!("{OLD}{name}"));
    let replacing = match kind_of(&target) {
        Ok(Kind::Folder) => true,
        Ok(_) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(SyncError::NotAFolder { path: target });
        }
        Err(_) => false,
    };
    if replacing && let Err(e) = std::fs::rename(&target, &aside) {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(io_err(&target)(e));
    }
    if let Err(e) = std::fs::rename(&tmp, &target) {
        if replacing {
            let _ = std::fs::rename(&aside, &target);
        }
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(io_err(&target)(e));
    }
    if replacing {
        std::fs::remove_dir_all(&aside).map_err(io_err(&aside))?;
    }
    Ok(())
}

fn write_files(dir: &Path, bundle: &Bundle) -> Result<(), SyncError> {
    for f in bundle.files() {
        let path = dir.join(f.path.as_str());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(if f.executable { 0o755 } else { 0o644 });
        }
        let mut out = opts.open(&path).map_err(io_err(&path))?;
        out.write_all(&f.bytes).map_err(io_err(&path))?;
        out.sync_all().map_err(io_err(&path))?;
    }
    Ok(())
}

/// Remove the skill folder `name` (a real folder, checked by the caller): renamed aside first,
/// so no half-removed folder is ever left under its name.
pub fn remove_skill(folder: &Path, name: &str) -> Result<(), SyncError> {
    check_skill_name(name).map_err(|why| SyncError::BadName {
        name: name.to_owned(),
        why,
    })?;
    let target = folder.join(name);
    if kind_of(&target)? != Kind::Folder {
        return Err(SyncError::NotAFolder { path: target });
    }
    let aside = folder.join(format!("{OLD}{name}"));
    std::fs::rename(&target, &aside).map_err(io_err(&target))?;
    std::fs::remove_dir_all(&aside).map_err(io_err(&aside))
}

/// Write the file `name` in `folder` atomically: a temporary file, renamed over it.
pub fn write_file_atomic(folder: &Path, name: &str, bytes: &[u8]) -> Result<(), SyncError> {
    let tmp = folder.join(temp_name(MANIFEST_TMP));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err(&tmp)(e));
    }
    let target = folder.join(name);
    std::fs::rename(&tmp, &target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err(&target)(e)
    })
}

/// Take the exclusive lock of the skills folder `folder` for one sync, without waiting: held
/// until the file returned is dropped (or the process ends). Another sync holding it is
/// [`SyncError::Busy`]. The lock file is made when missing; a link in its place is refused.
pub fn lock(folder: &Path) -> Result<std::fs::File, SyncError> {
    let path = folder.join(LOCK);
    let file = open_lock(&path)?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(SyncError::Busy {
            path: folder.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err(&path)(e)),
    }
}

/// Open the lock file at `path`, made when missing; never through a link.
fn open_lock(path: &Path) -> Result<std::fs::File, SyncError> {
    let not_plain = || io_err(path)(std::io::Error::other("not a plain file: remove it"));
    // Twice: another sync may make the file between the look and `create_new`.
    for _ in 0..2 {
        let before = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            // `create_new` follows no link: one put there meanwhile fails the open.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)
                {
                    Ok(f) => return Ok(f),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => return Err(io_err(path)(e)),
                }
            }
            Err(e) => return Err(io_err(path)(e)),
        };
        if before.file_type().is_symlink() {
            return Err(SyncError::LinkRefused {
                to: std::fs::read_link(path).unwrap_or_default(),
                path: path.to_path_buf(),
            });
        }
        if !before.is_file() {
            return Err(not_plain());
        }
        let f = std::fs::OpenOptions::new()
            .read(true)
            .open(path)
            .map_err(io_err(path))?;
        let after = f.metadata().map_err(io_err(path))?;
        if !same_file(&before, &after) {
            return Err(not_plain());
        }
        return Ok(f);
    }
    Err(not_plain())
}

/// Finish what an interrupted sync left in `folder`: an old copy renamed aside whose new copy
/// never arrived is renamed back (the skill is old again), other temporary folders and files
/// are removed. Entries with sync's prefix that are links are left alone (never followed), and
/// so is [`LOCK`] (not a temporary entry). Run with the folder's [`lock`] held, so what it
/// removes is no running sync's. Returns what was done, one line each.
pub fn recover(folder: &Path) -> Result<Vec<String>, SyncError> {
    let mut done = Vec::new();
    for entry in std::fs::read_dir(folder).map_err(io_err(folder))? {
        let entry = entry.map_err(io_err(folder))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.starts_with(TEMP_PREFIX) {
            continue;
        }
        let path = entry.path();
        match kind_of(&path)? {
            Kind::Link(_) => {
                done.push(format!("{name}: a link with sync's prefix; left alone"));
                continue;
            }
            Kind::Other if name.starts_with(MANIFEST_TMP) => {
                std::fs::remove_file(&path).map_err(io_err(&path))?;
            }
            Kind::Other => {
                done.push(format!("{name}: not sync's; left alone"));
                continue;
            }
            Kind::Folder => {
                let skill = name
                    .strip_prefix(OLD)
                    .filter(|s| check_skill_name(s).is_ok());
                let restore = skill.filter(|s| {
                    matches!(std::fs::symlink_metadata(folder.join(s)),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound)
                });
                if let Some(s) = restore {
                    std::fs::rename(&path, folder.join(s)).map_err(io_err(&path))?;
                    done.push(format!(
                        "{s}: restored the copy an interrupted sync had set aside"
                    ));
                    continue;
                }
                std::fs::remove_dir_all(&path).map_err(io_err(&path))?;
            }
        }
        done.push(format!("{name}: removed what an interrupted sync left"));
    }
    done.sort();
    Ok(done)
}
