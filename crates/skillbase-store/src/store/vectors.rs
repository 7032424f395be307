//! Skill vectors of the semantic ranking stage: stored per (model, revision content digest), so
//! a restart or a second server reads them instead of recomputing, and an edit re-embeds only the
//! skill it changed.

use super::Store;
use crate::error::{Result, StoreError};
use crate::model::MAX_VECTOR_MODEL_CHARS as MAX_MODEL_CHARS;
use crate::sql::vectors::{MAX_DIM, VectorPage};

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

    /// Up to `limit` stored vectors of every model, in (model, digest) order, after the pair
    /// `after` (from the start when `None`). A row that does not decode is left out of the
    /// page's rows, as [`Store::vectors`] leaves it out, but counts for where the next page
    /// starts. For carrying computed vectors from one store to another
    /// ([`Store::copy_vectors_from`]).
    pub async fn vectors_after(
        &self,
        after: Option<&(String, String)>,
        limit: usize,
    ) -> Result<VectorPage> {
        let limit = limit.clamp(1, 10_000);
        on_db!(self, vectors::vectors_after(after, limit))
    }

    /// Copies every vector `from` holds that this store lacks (vectors are derived data keyed
    /// by model and content digest, so any store's are valid in any other); returns how many
    /// rows were read. Page by page: memory stays bounded for any number of vectors.
    pub async fn copy_vectors_from(&self, from: &Store) -> Result<usize> {
        const PAGE: usize = 2_000;
        let mut after: Option<(String, String)> = None;
        let mut copied = 0;
        loop {
            let VectorPage { rows: page, last } = from.vectors_after(after.as_ref(), PAGE).await?;
            copied += page.len();
            // One statement batch per model within the page.
            let mut start = 0;
            while start < page.len() {
                let model = &page[start].0;
                let end = page[start..]
                    .iter()
                    .position(|(m, _, _)| m != model)
                    .map_or(page.len(), |i| start + i);
                let rows: Vec<(String, Vec<f32>)> = page[start..end]
                    .iter()
                    .map(|(_, d, v)| (d.clone(), v.clone()))
                    .collect();
                self.put_vectors(model, &rows).await?;
                start = end;
            }
            match last {
                Some(key) => after = Some(key),
                None => return Ok(copied),
            }
        }
    }

    /// How many vectors are stored for `model`.
    pub async fn vector_count(&self, model: &str) -> Result<i64> {
        check_model(model)?;
        on_db!(self, vectors::vector_count(model))
    }
}
