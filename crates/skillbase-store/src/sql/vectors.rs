//! Skill vectors of the semantic ranking stage, keyed by (embedder model, content digest).
//!
//! A vector is derived data: it can always be recomputed from the revision it was computed from,
//! so a row that does not decode (wrong length, a value that is not finite) is treated as absent
//! and recomputed, never an error. Rows are only ever inserted; a digest's vector for a model
//! never changes, so a second writer's copy of the same row is dropped (`ON CONFLICT DO NOTHING`).

/// Most dimensions a stored vector may have (larger rows are refused on write, ignored on read).
pub(crate) const MAX_DIM: usize = 8_192;
/// Rows per multi-row statement (3 binds each, under SQLite's and PostgreSQL's bind limits).
const CHUNK: usize = 300;

/// A page of stored vectors in (model, digest) order: the rows that decode, and the key of the
/// page's last row read (decoded or not), where the next page starts; `None` past the end.
#[derive(Debug, Default)]
pub struct VectorPage {
    /// `(model, digest, vector)`.
    pub rows: Vec<(String, String, Vec<f32>)>,
    /// The last (model, digest) read.
    pub last: Option<(String, String)>,
}

/// A vector as stored: little-endian f32s.
pub(crate) fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector, or `None` when the row is not `dim` finite f32s.
pub(crate) fn decode(dim: i64, bytes: &[u8]) -> Option<Vec<f32>> {
    let dim = usize::try_from(dim)
        .ok()
        .filter(|&d| d > 0 && d <= MAX_DIM)?;
    if bytes.len() != dim * 4 {
        return None;
    }
    let v: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    v.iter().all(|x| x.is_finite()).then_some(v)
}

macro_rules! statements {
    ($backend:ident, $db:ty, $begin:literal, $lock:literal) => {
        use super::*;
        use crate::error::Result;
        use crate::sql::now_ms;
        use sqlx::{Pool, QueryBuilder};

        type Db = $db;

        pub async fn vectors(
            pool: &Pool<Db>,
            model: &str,
            digests: &[String],
        ) -> Result<Vec<(String, Vec<f32>)>> {
            let mut out = Vec::with_capacity(digests.len());
            for chunk in digests.chunks(CHUNK) {
                let mut q: QueryBuilder<Db> = QueryBuilder::new(
                    "SELECT digest, dim, vector FROM skill_vectors WHERE model = ",
                );
                q.push_bind(model.to_owned());
                q.push(" AND digest IN (");
                let mut sep = q.separated(", ");
                for d in chunk {
                    sep.push_bind(d.clone());
                }
                q.push(")");
                let rows: Vec<(String, i64, Vec<u8>)> = q.build_query_as().fetch_all(pool).await?;
                out.extend(
                    rows.into_iter()
                        .filter_map(|(d, dim, bytes)| decode(dim, &bytes).map(|v| (d, v))),
                );
            }
            Ok(out)
        }

        pub async fn put_vectors(
            pool: &Pool<Db>,
            model: &str,
            rows: &[(String, Vec<f32>)],
        ) -> Result<()> {
            let mut tx = pool.begin_with($begin).await?;
            let now = now_ms();
            for chunk in rows.chunks(CHUNK) {
                let mut q: QueryBuilder<Db> = QueryBuilder::new(
                    "INSERT INTO skill_vectors (model, digest, dim, vector, created_at) ",
                );
                q.push_values(chunk, |mut b, (digest, v)| {
                    b.push_bind(model.to_owned())
                        .push_bind(digest.clone())
                        .push_bind(v.len() as i64)
                        .push_bind(encode(v))
                        .push_bind(now);
                });
                q.push(" ON CONFLICT (model, digest) DO NOTHING");
                q.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        }

        pub async fn vectors_after(
            pool: &Pool<Db>,
            after: Option<&(String, String)>,
            limit: usize,
        ) -> Result<VectorPage> {
            let (model, digest) = after.cloned().unwrap_or_default();
            let rows: Vec<(String, String, i64, Vec<u8>)> = sqlx::query_as(
                "SELECT model, digest, dim, vector FROM skill_vectors \
                 WHERE model > $1 OR (model = $1 AND digest > $2) \
                 ORDER BY model, digest LIMIT $3",
            )
            .bind(model)
            .bind(digest)
            .bind(limit as i64)
            .fetch_all(pool)
            .await?;
            let last = rows.last().map(|(m, d, _, _)| (m.clone(), d.clone()));
            let rows = rows
                .into_iter()
                .filter_map(|(m, d, dim, bytes)| decode(dim, &bytes).map(|v| (m, d, v)))
                .collect();
            Ok(VectorPage { rows, last })
        }

        pub async fn vector_count(pool: &Pool<Db>, model: &str) -> Result<i64> {
            let (n,): (i64,) =
                sqlx::query_as("SELECT COUNT(*) FROM skill_vectors WHERE model = $1")
                    .bind(model)
                    .fetch_one(pool)
                    .await?;
            Ok(n)
        }
    };
}

crate::sql::for_each_backend!(statements);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_and_bad_rows_read_as_absent() {
        let v = vec![0.25f32, -1.5, 3.0e-7];
        assert_eq!(decode(3, &encode(&v)), Some(v.clone()));
        // Wrong length, wrong dim, a NaN, a zero or huge dim: absent (recomputed), not an error.
        assert_eq!(decode(4, &encode(&v)), None);
        assert_eq!(decode(3, &encode(&v)[..11]), None);
        assert_eq!(decode(1, &encode(&[f32::NAN])), None);
        assert_eq!(decode(1, &encode(&[f32::INFINITY])), None);
        assert_eq!(decode(0, &[]), None);
        assert_eq!(decode(-1, &[]), None);
        assert_eq!(
            decode(MAX_DIM as i64 + 1, &vec![0; (MAX_DIM + 1) * 4]),
            None
        );
    }
}
