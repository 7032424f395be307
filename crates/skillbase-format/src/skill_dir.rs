//! Finding and reading a skill folder's SKILL.md on disk.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest SKILL.md read by default (1 MiB); the specification recommends under 500 lines.
pub const DEFAULT_MAX_SKILL_MD_BYTES: u64 = 1024 * 1024;

/// Why SKILL.md could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The skill folder does not exist; holds the path as displayed.
    #[error("Path does not exist: {0}")]
    NotFound(String),
    /// The path exists but is not a folder; holds the path as displayed.
    #[error("Not a directory: {0}")]
    NotADirectory(String),
    /// The folder has neither `SKILL.md` nor `skill.md`.
    #[error("Missing required file: SKILL.md")]
    MissingSkillMd,
    /// The file is larger than the caller's byte limit (by default
    /// [`DEFAULT_MAX_SKILL_MD_BYTES`]); move detail into other files.
    #[error(
        "{file} is {size} bytes, over the {limit}-byte limit; move detail into references/ files"
    )]
    TooLarge {
        /// The file's name.
        file: String,
        /// Its size in bytes (as reported, or as read when it grew while reading).
        size: u64,
        /// The limit in bytes that it exceeds.
        limit: u64,
    },
    /// The file's bytes are not valid UTF-8.
    #[error("{file} is not valid UTF-8 (invalid byte at offset {offset}); save it as UTF-8 text")]
    NotUtf8 {
        /// The file's name.
        file: String,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// Opening, inspecting or reading the file or folder failed.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The file's name, or the folder as displayed.
        file: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// The SKILL.md of a skill folder: `SKILL.md` if present, else `skill.md`.
pub fn find_skill_md(dir: &Path) -> Option<PathBuf> {
    ["SKILL.md", "skill.md"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Whether a path names a SKILL.md file (any case), so the skill folder is its parent.
pub fn is_skill_md_path(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.eq_ignore_ascii_case("skill.md"))
}

/// Read a skill folder's SKILL.md text, checking the folder, size and encoding.
pub fn read_skill_md(dir: &Path, max_bytes: u64) -> Result<(PathBuf, String), ReadError> {
    // The common case first: a SKILL.md that is a file means `dir` is a folder, so the folder
    // is looked at only to explain a miss.
    if let Some(path) = find_skill_md(dir) {
        let text = read_text_file(&path, max_bytes)?;
        return Ok((path, text));
    }
    let shown = dir.display().to_string();
    let meta = match fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReadError::NotFound(shown));
        }
        Err(source) => {
            return Err(ReadError::Io {
                file: shown,
                source,
            });
        }
    };
    if !meta.is_dir() {
        return Err(ReadError::NotADirectory(shown));
    }
    Err(ReadError::MissingSkillMd)
}

/// Read a UTF-8 text file of at most `max_bytes`, never reading past the limit.
pub fn read_text_file(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let io = |source| ReadError::Io {
        file: file_name.clone(),
        source,
    };
    let f = fs::File::open(path).map_err(io)?;
    let size = f.metadata().map_err(io)?.len();
    if size > max_bytes {
        return Err(ReadError::TooLarge {
            file: file_name,
            size,
            limit: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(size as usize);
    f.take(max_bytes + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(ReadError::TooLarge {
            file: file_name,
            size: bytes.len() as u64,
            limit: max_bytes,
        });
    }
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 {
        file: file_name,
        offset: e.utf8_error().valid_up_to(),
    })
}
