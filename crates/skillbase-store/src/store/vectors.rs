//! Skill vectors of the semantic ranking stage: stored per (model, revision content digest), so
//! a restart or a second server reads them instead of recomputing, and an edit re-embeds only the
//! skill it changed.

use super::Store;
use crate::error::{Result, StoreError};
use crate::model::MAX_VECTOR_MODEL_CHARS as MAX_MODEL_CHARS;
use crate::sql::vectors::MAX_DIM;

fn check_model(model: &str) -> Result<()> {
    if model.is_empty()
        || model.chars().count() > MAX_MODEL_CHARS
        || model.chars().any(char::is_control)
    {
        return Err(StoreError::Invalid(format!(
            "vector model id: 1 to {MAX_MODEL_CHARS} characters, no control characters"
        )));
    }
    Ok(())
}

impl Store {
    /// The stored vectors of `model` for these digests (`sha256:…` strings); digests without a
    /// usable vector are simply absent from the answer.
    pub async fn vectors(
        &self,
        model: &str,
        digests: &[String],
    ) -> Result<Vec<(String, Vec<f32>)>> {
        check_model(model)?;
        if digests.is_empty() {
            return Ok(Vec::new());
        }
        on_db!(self, vectors::vectors(model, digests))
    }

    /// Store vectors of `model` by digest (a digest already stored keeps its first vector). Every
    /// vector must have 1 to 8,192 finite values; nothing is written otherwise.
    pub async fn put_vectors(&self, model: &str, rows: &[(String, Vec<f32>)]) -> Result<()> {
        check_model(model)?;
        for (digest, v) in rows {
            if digest.parse::<skillbase_format::Digest>().is_err() {
                return Err(StoreError::Invalid(format!(
                    "vector digest '{}': expected `sha256:` and 64 hex digits",
                    digest.chars().take(80).collect::<String>()
                )));
            }
            if v.is_empty() || v.len() > MAX_DIM || !v.iter().all(|x| x.is_finite()) {
                return Err(StoreError::Invalid(format!(
                    "vector for {digest}: 1 to {MAX_DIM} finite values, got {} values",
                    v.len()
                )));
            }
        }
        if rows.is_empty() {
            return Ok(());
        }
        on_db!(self, vectors::put_vectors(model, rows))
    }

    /// How many vectors are stored for `model`.
    pub async fn vector_count(&self, model: &str) -> Result<i64> {
        check_model(model)?;
        on_db!(self, vectors::vector_count(model))
    }
}
