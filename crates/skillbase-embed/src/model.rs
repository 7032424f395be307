//! The BERT encoder: weights from model.safetensors, the forward pass, mean pooling.

use crate::error::EmbedError;
use crate::math::{Mat, fill_rows, gelu, gemm, layer_norm, softmax};
use safetensors::{Dtype, SafeTensors};
use serde_json::Value;
use std::path::Path;

/// The hyper-parameters read from config.json.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub eps: f32,
}

impl Config {
    pub fn from_json(json: &Value, path: &Path) -> Result<Config, EmbedError> {
        let int = |key: &str| -> Result<usize, EmbedError> {
            let v = json.get(key).and_then(Value::as_u64).ok_or_else(|| {
                EmbedError::config(
                    path,
                    format!("\"{key}\" is missing or not a positive integer"),
                )
            })?;
            // Bounds that keep every size computation far from overflow.
            if v == 0 || v > 1 << 20 {
                return Err(EmbedError::config(
                    path,
                    format!("\"{key}\" = {v} is out of range"),
                ));
            }
            Ok(v as usize)
        };
        let model_type = json.get("model_type").and_then(Value::as_str);
        if model_type != Some("bert") {
            return Err(EmbedError::config(
                path,
                format!("model_type is {model_type:?}: only \"bert\" models are supported"),
            ));
        }
        match json.get("hidden_act").and_then(Value::as_str) {
            Some("gelu") | None => {}
            Some(other) => {
                return Err(EmbedError::config(
                    path,
                    format!("hidden_act {other:?} is not supported (only \"gelu\")"),
                ));
            }
        }
        match json.get("position_embedding_type").and_then(Value::as_str) {
            Some("absolute") | None => {}
            Some(other) => {
                return Err(EmbedError::config(
                    path,
                    format!(
                        "position_embedding_type {other:?} is not supported (only \"absolute\")"
                    ),
                ));
            }
        }
        let eps = json
            .get("layer_norm_eps")
            .and_then(Value::as_f64)
            .unwrap_or(1e-12);
        if !(eps > 0.0 && eps < 1.0) {
            return Err(EmbedError::config(
                path,
                format!("layer_norm_eps {eps} is out of range"),
            ));
        }
        let cfg = Config {
            hidden: int("hidden_size")?,
            layers: int("num_hidden_layers")?,
            heads: int("num_attention_heads")?,
            intermediate: int("intermediate_size")?,
            vocab: int("vocab_size")?,
            max_positions: int("max_position_embeddings")?,
            type_vocab: int("type_vocab_size").unwrap_or(2),
            eps: eps as f32,
        };
        if !cfg.hidden.is_multiple_of(cfg.heads) {
            return Err(EmbedError::config(
                path,
                "hidden_size is not a multiple of num_attention_heads",
            ));
        }
        if cfg.layers > 64 {
            return Err(EmbedError::config(
                path,
                "num_hidden_layers is out of range",
            ));
        }
        Ok(cfg)
    }
}

struct Layer {
    /// Query, key and value weights stacked: `[3 * hidden, hidden]` (PyTorch's `[out, in]`).
    qkv_w: Vec<f32>,
    qkv_b: Vec<f32>,
    out_w: Vec<f32>,
    out_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    up_w: Vec<f32>,
    up_b: Vec<f32>,
    down_w: Vec<f32>,
    down_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

/// BERT's weights, ready for the forward pass.
pub(crate) struct Bert {
    pub cfg: Config,
    word: Vec<f32>,
    position: Vec<f32>,
    /// Token type 0's embedding (every token of a single sequence has type 0).
    token_type: Vec<f32>,
    emb_ln_g: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
}

struct Tensors<'a> {
    st: SafeTensors<'a>,
}

impl Tensors<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        // Some exports prefix every name with "bert.".
        let view = self
            .st
            .tensor(name)
            .or_else(|_| self.st.tensor(&format!("bert.{name}")))
            .map_err(|_| EmbedError::MissingTensor {
                name: name.to_owned(),
            })?;
        if view.dtype() != Dtype::F32 || view.shape() != shape {
            return Err(EmbedError::TensorShape {
                name: name.to_owned(),
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
                dtype: format!("{:?}", view.dtype()),
            });
        }
        let data = view.data();
        let values: Vec<f32> = data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(EmbedError::TensorShape {
                name: format!("{name} (element {i} is not finite)"),
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
                dtype: "F32".into(),
            });
        }
        Ok(values)
    }
}

impl Bert {
    pub fn from_safetensors(bytes: &[u8], cfg: Config, path: &Path) -> Result<Bert, EmbedError> {
        let st = SafeTensors::deserialize(bytes).map_err(|e| EmbedError::Safetensors {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let t = Tensors { st };
        let h = cfg.hidden;
        let type_emb = t.get(
            "embeddings.token_type_embeddings.weight",
            &[cfg.type_vocab, h],
        )?;
        let mut layers = Vec::with_capacity(cfg.layers);
        for i in 0..cfg.layers {
            let p = format!("encoder.layer.{i}.");
            let g = |name: &str, shape: &[usize]| t.get(&format!("{p}{name}"), shape);
            let mut qkv_w = g("attention.self.query.weight", &[h, h])?;
            qkv_w.extend(g("attention.self.key.weight", &[h, h])?);
            qkv_w.extend(g("attention.self.value.weight", &[h, h])?);
            let mut qkv_b = g("attention.self.query.bias", &[h])?;
            qkv_b.extend(g("attention.self.key.bias", &[h])?);
            qkv_b.extend(g("attention.self.value.bias", &[h])?);
            layers.push(Layer {
                qkv_w,
                qkv_b,
                out_w: g("attention.output.dense.weight", &[h, h])?,
                out_b: g("attention.output.dense.bias", &[h])?,
                ln1_g: g("attention.output.LayerNorm.weight", &[h])?,
                ln1_b: g("attention.output.LayerNorm.bias", &[h])?,
                up_w: g("intermediate.dense.weight", &[cfg.intermediate, h])?,
                up_b: g("intermediate.dense.bias", &[cfg.intermediate])?,
                down_w: g("output.dense.weight", &[h, cfg.intermediate])?,
                down_b: g("output.dense.bias", &[h])?,
                ln2_g: g("output.LayerNorm.weight", &[h])?,
                ln2_b: g("output.LayerNorm.bias", &[h])?,
            });
        }
        Ok(Bert {
            word: t.get("embeddings.word_embeddings.weight", &[cfg.vocab, h])?,
            position: t.get(
                "embeddings.position_embeddings.weight",
                &[cfg.max_positions, h],
            )?,
            token_type: type_emb[..h].to_vec(),
            emb_ln_g: t.get("embeddings.LayerNorm.weight", &[h])?,
            emb_ln_b: t.get("embeddings.LayerNorm.bias", &[h])?,
            layers,
            cfg,
        })
    }

    /// Mean-pooled, L2-normalised sentence embedding of `ids` (ids < vocab, at most
    /// `max_positions` of them: the caller guarantees both).
    pub fn embed(&self, ids: &[u32]) -> Vec<f32> {
        let h = self.cfg.hidden;
        let n = ids.len().min(self.cfg.max_positions);
        let heads = self.cfg.heads;
        let dh = h / heads;
        let inter = self.cfg.intermediate;
        let eps = self.cfg.eps;

        // Embeddings: word + position + token type 0, then layer norm.
        let mut x = vec![0f32; n * h];
        for (i, (row, &id)) in x.chunks_exact_mut(h).zip(ids).enumerate() {
            let id = (id as usize).min(self.cfg.vocab - 1);
            let w = &self.word[id * h..(id + 1) * h];
            let p = &self.position[i * h..(i + 1) * h];
            for (((o, w), p), t) in row.iter_mut().zip(w).zip(p).zip(&self.token_type) {
                *o = w + p + t;
            }
        }
        layer_norm(&mut x, &self.emb_ln_g, &self.emb_ln_b, eps);

        let mut qkv = vec![0f32; n * 3 * h];
        let mut scores = vec![0f32; n * n];
        let mut ctx = vec![0f32; n * h];
        let mut tmp = vec![0f32; n * h];
        let mut up = vec![0f32; n * inter];
        let scale = 1.0 / (dh as f32).sqrt();
        for l in &self.layers {
            // Q, K, V in one product: [n, 3h] = x · Wqkvᵀ + b.
            fill_rows(&mut qkv, &l.qkv_b);
            gemm(
                1.0,
                Mat::rows(&x, n, h, h),
                Mat::rows(&l.qkv_w, 3 * h, h, h).t(),
                1.0,
                &mut qkv,
                3 * h,
            );
            // Self-attention per head. One sequence has no padding: every key is attended.
            for head in 0..heads {
                let q = Mat::rows(&qkv[head * dh..], n, dh, 3 * h);
                let k = Mat::rows(&qkv[h + head * dh..], n, dh, 3 * h);
                let v = Mat::rows(&qkv[2 * h + head * dh..], n, dh, 3 * h);
                gemm(scale, q, k.t(), 0.0, &mut scores, n);
                for row in scores.chunks_exact_mut(n) {
                    softmax(row);
                }
                gemm(
                    1.0,
                    Mat::rows(&scores, n, n, n),
                    v,
                    0.0,
                    &mut ctx[head * dh..],
                    h,
                );
            }
            // Attention output, residual, layer norm.
            fill_rows(&mut tmp, &l.out_b);
            gemm(
                1.0,
                Mat::rows(&ctx, n, h, h),
                Mat::rows(&l.out_w, h, h, h).t(),
                1.0,
                &mut tmp,
                h,
            );
            for (t, x) in tmp.iter_mut().zip(&x) {
                *t += x;
            }
            layer_norm(&mut tmp, &l.ln1_g, &l.ln1_b, eps);
            std::mem::swap(&mut x, &mut tmp);
            // Feed-forward: GELU(x · W1ᵀ + b1) · W2ᵀ + b2, residual, layer norm.
            fill_rows(&mut up, &l.up_b);
            gemm(
                1.0,
                Mat::rows(&x, n, h, h),
                Mat::rows(&l.up_w, inter, h, h).t(),
                1.0,
                &mut up,
                inter,
            );
            gelu(&mut up);
            fill_rows(&mut tmp, &l.down_b);
            gemm(
                1.0,
                Mat::rows(&up, n, inter, inter),
                Mat::rows(&l.down_w, h, inter, inter).t(),
                1.0,
                &mut tmp,
                h,
            );
            for (t, x) in tmp.iter_mut().zip(&x) {
                *t += x;
            }
            layer_norm(&mut tmp, &l.ln2_g, &l.ln2_b, eps);
            std::mem::swap(&mut x, &mut tmp);
        }

        // Mean pooling over the attention mask (all ones), then L2 normalisation.
        let mut pooled = vec![0f64; h];
        for row in x.chunks_exact(h) {
            for (p, v) in pooled.iter_mut().zip(row) {
                *p += *v as f64;
            }
        }
        let count = n.max(1) as f64;
        let norm = pooled
            .iter()
            .map(|p| (p / count) * (p / count))
            .sum::<f64>()
            .sqrt()
            .max(1e-12);
        pooled.iter().map(|p| (p / count / norm) as f32).collect()
    }
}
