//! The BERT encoder: weights from model.safetensors, the forward pass, mean pooling.

use crate::error::EmbedError;
use crate::math::{Mat, fill_rows, gelu, gemm, layer_norm, softmax};
use crate::quant::{QMatrix, Scratch};
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
        // The quantized products sum `width · 255 · 63` in 32 bits (see `quant`).
        if cfg.hidden > 65_536 || cfg.intermediate > 65_536 {
            return Err(EmbedError::config(
                path,
                "hidden_size and intermediate_size must be at most 65536",
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

/// A linear layer: its weights as f32 (the exact path) or quantized (the fast path).
pub(crate) enum Linear {
    /// `w` is PyTorch's `[rows, cols]`.
    Exact {
        w: Vec<f32>,
        b: Vec<f32>,
        rows: usize,
        cols: usize,
    },
    Quant(QMatrix),
}

impl Linear {
    pub fn exact(w: Vec<f32>, b: Vec<f32>, rows: usize, cols: usize) -> Linear {
        debug_assert_eq!(w.len(), rows * cols);
        Linear::Exact { w, b, rows, cols }
    }

    fn rows(&self) -> usize {
        match self {
            Linear::Exact { rows, .. } => *rows,
            Linear::Quant(q) => q.rows(),
        }
    }

    /// `out = x · wᵀ + b` for the `n` rows of `x`.
    #[inline(always)]
    fn forward(&self, x: &[f32], n: usize, cols: usize, out: &mut [f32], scratch: &mut Scratch) {
        match self {
            Linear::Exact { w, b, rows, .. } => {
                fill_rows(out, b);
                gemm(
                    1.0,
                    Mat::rows(x, n, cols, cols),
                    Mat::rows(w, *rows, cols, cols).t(),
                    1.0,
                    out,
                    *rows,
                );
            }
            Linear::Quant(q) => scratch.forward(q, &x[..n * cols], n, cols, out),
        }
    }

    fn quantize(&mut self) {
        if let Linear::Exact { w, b, rows, cols } = self {
            *self = Linear::Quant(QMatrix::new(w, *rows, *cols, b));
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Linear::Exact { w, b, .. } => 4 * (w.len() + b.len()),
            Linear::Quant(q) => q.bytes(),
        }
    }
}

pub(crate) struct Layer {
    /// Query, key and value stacked: `[3 * hidden, hidden]`.
    pub qkv: Linear,
    pub out: Linear,
    pub ln1_g: Vec<f32>,
    pub ln1_b: Vec<f32>,
    pub up: Linear,
    pub down: Linear,
    pub ln2_g: Vec<f32>,
    pub ln2_b: Vec<f32>,
}

/// The word embedding table: f32 rows, or 4-bit blocks (`Q4_0`: per 32 values an f16 scale and
/// 16 bytes of nibbles, value = (nibble - 8) * scale) read a row at a time.
pub(crate) enum WordTable {
    F32(Vec<f32>),
    Q4(Vec<u8>),
    /// One byte a value, `(byte − zero) · scale` (as an ONNX file's dynamic quantization stores
    /// it).
    U8 {
        bytes: Vec<u8>,
        scale: f32,
        zero: f32,
    },
}

impl WordTable {
    fn row(&self, id: usize, h: usize, out: &mut [f32]) {
        match self {
            WordTable::F32(t) => out.copy_from_slice(&t[id * h..(id + 1) * h]),
            WordTable::Q4(t) => {
                let row_bytes = h / 32 * 18;
                crate::q4::dequantize_q4(&t[id * row_bytes..(id + 1) * row_bytes], out);
            }
            WordTable::U8 { bytes, scale, zero } => {
                for (o, &b) in out.iter_mut().zip(&bytes[id * h..(id + 1) * h]) {
                    *o = (f32::from(b) - zero) * scale;
                }
            }
        }
    }

    fn bytes(&self) -> usize {
        match self {
            WordTable::F32(t) => 4 * t.len(),
            WordTable::Q4(t) => t.len(),
            WordTable::U8 { bytes, .. } => bytes.len(),
        }
    }
}

/// [`Bert::embed_many`] as a call `pulp` compiles for AVX-512 or for AVX2 and FMA (the body
/// must be inlined into it, which a closure's is not). The element-wise work has no sum whose
/// order depends on the vector width (`sum8` keeps eight lanes on every machine) and Rust does
/// not fuse a multiply and an add on its own, so both give the same bits.
struct Embed<'a> {
    bert: &'a Bert,
    seqs: &'a [&'a [u32]],
    /// Where each sequence's second segment (token type 1) starts; empty: every token type 0.
    second: &'a [usize],
    out: Output,
}

/// What a forward pass gives per sequence.
#[derive(Clone, Copy, PartialEq)]
enum Output {
    /// Its tokens' last states, mean-pooled and L2-normalised (a sentence embedding).
    MeanPooled,
    /// Its first token's (`[CLS]`) last state, as it is (a cross-encoder's input to its head).
    First,
}

impl pulp::NullaryFnOnce for Embed<'_> {
    type Output = Vec<Vec<f32>>;

    #[inline(always)]
    fn call(self) -> Vec<Vec<f32>> {
        self.bert.forward_here(self.seqs, self.second, self.out)
    }
}

/// The instruction set the element-wise work is compiled for on this CPU (as
/// [`Bert::embed_many`] picks it).
pub(crate) fn elementwise_isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if pulp::x86::V4::try_new().is_some() {
            return "AVX-512";
        }
        if pulp::x86::V3::try_new().is_some() {
            return "AVX2 and FMA";
        }
    }
    "portable code"
}

/// BERT's weights, ready for the forward pass.
pub(crate) struct Bert {
    pub cfg: Config,
    pub word: WordTable,
    /// Row `i` is position `i`'s embedding.
    pub position: Vec<f32>,
    /// Token type 0's embedding (every token of a single sequence has type 0).
    pub token_type: Vec<f32>,
    /// Token type 1's embedding (a pair's second segment; empty when the model has none).
    pub token_type_b: Vec<f32>,
    pub emb_ln_g: Vec<f32>,
    pub emb_ln_b: Vec<f32>,
    pub layers: Vec<Layer>,
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
                qkv: Linear::exact(qkv_w, qkv_b, 3 * h, h),
                out: Linear::exact(
                    g("attention.output.dense.weight", &[h, h])?,
                    g("attention.output.dense.bias", &[h])?,
                    h,
                    h,
                ),
                ln1_g: g("attention.output.LayerNorm.weight", &[h])?,
                ln1_b: g("attention.output.LayerNorm.bias", &[h])?,
                up: Linear::exact(
                    g("intermediate.dense.weight", &[cfg.intermediate, h])?,
                    g("intermediate.dense.bias", &[cfg.intermediate])?,
                    cfg.intermediate,
                    h,
                ),
                down: Linear::exact(
                    g("output.dense.weight", &[h, cfg.intermediate])?,
                    g("output.dense.bias", &[h])?,
                    h,
                    cfg.intermediate,
                ),
                ln2_g: g("output.LayerNorm.weight", &[h])?,
                ln2_b: g("output.LayerNorm.bias", &[h])?,
            });
        }
        Ok(Bert {
            word: WordTable::F32(t.get("embeddings.word_embeddings.weight", &[cfg.vocab, h])?),
            position: t.get(
                "embeddings.position_embeddings.weight",
                &[cfg.max_positions, h],
            )?,
            token_type: type_emb[..h].to_vec(),
            token_type_b: type_emb
                .get(h..2 * h)
                .map(<[f32]>::to_vec)
                .unwrap_or_default(),
            emb_ln_g: t.get("embeddings.LayerNorm.weight", &[h])?,
            emb_ln_b: t.get("embeddings.LayerNorm.bias", &[h])?,
            layers,
            cfg,
        })
    }

    /// Quantizes every linear layer (the fast path; see [`crate::quant`]).
    pub fn quantize(&mut self) {
        for l in &mut self.layers {
            for lin in [&mut l.qkv, &mut l.out, &mut l.up, &mut l.down] {
                lin.quantize();
            }
        }
    }

    /// Bytes of weights held.
    pub fn bytes(&self) -> usize {
        let f = |v: &Vec<f32>| 4 * v.len();
        self.word.bytes()
            + f(&self.position)
            + f(&self.token_type)
            + f(&self.token_type_b)
            + self
                .layers
                .iter()
                .map(|l| {
                    l.qkv.bytes()
                        + l.out.bytes()
                        + l.up.bytes()
                        + l.down.bytes()
                        + f(&l.ln1_g)
                        + f(&l.ln1_b)
                        + f(&l.ln2_g)
                        + f(&l.ln2_b)
                })
                .sum::<usize>()
    }

    /// Mean-pooled, L2-normalised sentence embeddings of several sequences (ids < vocab, at most
    /// `max_positions` of them: the caller guarantees both), in one forward pass: their tokens
    /// are packed one after another (each at positions from 0, attending only to its own
    /// tokens), so each linear layer streams its weights once for all of them. A sequence's
    /// vector is the one it gets alone (the fast path quantizes per token; the products differ
    /// only in the order of their sums). On x86-64 with AVX-512, or AVX2 and FMA, the
    /// element-wise work (layer norms, GELU, softmax, quantization) is compiled for them.
    pub fn embed_many(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        self.dispatch(Embed {
            bert: self,
            seqs,
            second: &[],
            out: Output::MeanPooled,
        })
    }

    /// The `[CLS]` token's last state of each sequence, as a cross-encoder's head reads it:
    /// `second[i]` is where sequence `i`'s second segment (token type 1) starts.
    pub fn first_states(&self, seqs: &[&[u32]], second: &[usize]) -> Vec<Vec<f32>> {
        debug_assert_eq!(seqs.len(), second.len());
        self.dispatch(Embed {
            bert: self,
            seqs,
            second,
            out: Output::First,
        })
    }

    /// The `[CLS]` token's last state of each sequence, L2-normalised (the sentence embedding
    /// of a model pooled by its first token, as bge-small-en-v1.5 is).
    pub fn cls_many(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        let mut out = self.dispatch(Embed {
            bert: self,
            seqs,
            second: &[],
            out: Output::First,
        });
        for v in &mut out {
            let norm = v
                .iter()
                .map(|x| f64::from(*x) * f64::from(*x))
                .sum::<f64>()
                .sqrt()
                .max(1e-12);
            v.iter_mut()
                .for_each(|x| *x = (f64::from(*x) / norm) as f32);
        }
        out
    }

    fn dispatch(&self, call: Embed<'_>) -> Vec<Vec<f32>> {
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V4::try_new() {
            return simd.vectorize(call);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            return simd.vectorize(call);
        }
        self.forward_here(call.seqs, call.second, call.out)
    }

    #[cfg(test)]
    fn embed_here(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        self.forward_here(seqs, &[], Output::MeanPooled)
    }

    #[inline(always)]
    fn forward_here(&self, seqs: &[&[u32]], second: &[usize], output: Output) -> Vec<Vec<f32>> {
        let h = self.cfg.hidden;
        let lens: Vec<usize> = seqs
            .iter()
            .map(|s| s.len().min(self.cfg.max_positions))
            .collect();
        let n: usize = lens.iter().sum();
        let inter = self.cfg.intermediate;
        let eps = self.cfg.eps;

        // Embeddings: word + position (from 0 in each sequence) + token type (0, or 1 from
        // the sequence's second segment on when the model has that type), then layer norm.
        let mut x = vec![0f32; n * h];
        let mut rows = x.chunks_exact_mut(h);
        for (s, (seq, &len)) in seqs.iter().zip(&lens).enumerate() {
            let b_from = second.get(s).copied().unwrap_or(usize::MAX);
            for (i, (&id, row)) in seq[..len].iter().zip(rows.by_ref()).enumerate() {
                let id = (id as usize).min(self.cfg.vocab - 1);
                self.word.row(id, h, row);
                let p = &self.position[i * h..(i + 1) * h];
                let t = if i >= b_from && !self.token_type_b.is_empty() {
                    &self.token_type_b
                } else {
                    &self.token_type
                };
                for ((o, p), t) in row.iter_mut().zip(p).zip(t) {
                    *o += p + t;
                }
            }
        }
        layer_norm(&mut x, &self.emb_ln_g, &self.emb_ln_b, eps);

        let longest = lens.iter().copied().max().unwrap_or(0);
        let mut qkv = vec![0f32; n * 3 * h];
        let mut scores = vec![0f32; longest * longest];
        let mut ctx = vec![0f32; n * h];
        let mut tmp = vec![0f32; n * h];
        let mut up = vec![0f32; n * inter];
        let mut scratch = Scratch::default();
        for l in &self.layers {
            // Q, K, V in one product: [n, 3h] = x · Wqkvᵀ + b.
            debug_assert_eq!(l.qkv.rows(), 3 * h);
            l.qkv.forward(&x, n, h, &mut qkv, &mut scratch);
            self.attention(&qkv, &lens, &mut scores, &mut ctx);
            // Attention output, residual, layer norm.
            l.out.forward(&ctx, n, h, &mut tmp, &mut scratch);
            for (t, x) in tmp.iter_mut().zip(&x) {
                *t += x;
            }
            layer_norm(&mut tmp, &l.ln1_g, &l.ln1_b, eps);
            std::mem::swap(&mut x, &mut tmp);
            // Feed-forward: GELU(x · W1ᵀ + b1) · W2ᵀ + b2, residual, layer norm.
            l.up.forward(&x, n, h, &mut up, &mut scratch);
            gelu(&mut up);
            l.down.forward(&up, n, inter, &mut tmp, &mut scratch);
            for (t, x) in tmp.iter_mut().zip(&x) {
                *t += x;
            }
            layer_norm(&mut tmp, &l.ln2_g, &l.ln2_b, eps);
            std::mem::swap(&mut x, &mut tmp);
        }

        let mut out = Vec::with_capacity(seqs.len());
        let mut start = 0;
        for &len in &lens {
            out.push(match output {
                Output::MeanPooled => mean_pool(&x[start * h..(start + len) * h], h),
                Output::First if len == 0 => vec![0.0; h],
                Output::First => x[start * h..(start + 1) * h].to_vec(),
            });
            start += len;
        }
        out
    }

    /// Self-attention per sequence and head, into `ctx`: a sequence has no padding, so every
    /// key of its own is attended, and none of another's.
    #[inline(always)]
    fn attention(&self, qkv: &[f32], lens: &[usize], scores: &mut [f32], ctx: &mut [f32]) {
        let h = self.cfg.hidden;
        let heads = self.cfg.heads;
        let dh = h / heads;
        let scale = 1.0 / (dh as f32).sqrt();
        let mut start = 0;
        for &m in lens {
            let qkv = &qkv[start * 3 * h..(start + m) * 3 * h];
            for head in 0..heads {
                let q = Mat::rows(&qkv[head * dh..], m, dh, 3 * h);
                let k = Mat::rows(&qkv[h + head * dh..], m, dh, 3 * h);
                let v = Mat::rows(&qkv[2 * h + head * dh..], m, dh, 3 * h);
                let scores = &mut scores[..m * m];
                gemm(scale, q, k.t(), 0.0, scores, m);
                for row in scores.chunks_exact_mut(m) {
                    softmax(row);
                }
                gemm(
                    1.0,
                    Mat::rows(scores, m, m, m),
                    v,
                    0.0,
                    &mut ctx[start * h + head * dh..],
                    h,
                );
            }
            start += m;
        }
    }
}

/// Mean pooling of `x`'s `h`-wide rows (the attention mask is all ones), then L2
/// normalisation; no rows give a zero vector.
#[inline(always)]
fn mean_pool(x: &[f32], h: usize) -> Vec<f32> {
    let n = x.len() / h;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::numbers;

    /// A small BERT with random weights: widths that are not a multiple of any vector width.
    fn random_bert() -> Bert {
        let (h, inter, vocab) = (36, 76, 50);
        let cfg = Config {
            hidden: h,
            layers: 2,
            heads: 3,
            intermediate: inter,
            vocab,
            max_positions: 40,
            type_vocab: 1,
            eps: 1e-12,
        };
        let mut seed = 0;
        let mut v = |n: usize, scale: f32| {
            seed += 1;
            numbers(seed, n, scale)
        };
        let layers = (0..cfg.layers)
            .map(|_| Layer {
                qkv: Linear::exact(v(3 * h * h, 0.3), v(3 * h, 0.1), 3 * h, h),
                out: Linear::exact(v(h * h, 0.3), v(h, 0.1), h, h),
                ln1_g: v(h, 1.0),
                ln1_b: v(h, 0.1),
                up: Linear::exact(v(inter * h, 0.3), v(inter, 0.1), inter, h),
                down: Linear::exact(v(h * inter, 0.3), v(h, 0.1), h, inter),
                ln2_g: v(h, 1.0),
                ln2_b: v(h, 0.1),
            })
            .collect();
        Bert {
            word: WordTable::F32(v(vocab * h, 1.0)),
            position: v(cfg.max_positions * h, 0.5),
            token_type: v(h, 0.1),
            token_type_b: Vec::new(),
            emb_ln_g: v(h, 1.0),
            emb_ln_b: v(h, 0.1),
            layers,
            cfg,
        }
    }

    #[test]
    fn every_instruction_set_gives_the_same_bits() {
        let seqs: [&[u32]; 3] = [&[1, 7, 9, 3, 49, 0, 12], &[5], &[2; 33]];
        for quantized in [false, true] {
            let mut bert = random_bert();
            if quantized {
                bert.quantize();
            }
            let plain = bert.embed_here(&seqs);
            assert!(plain.iter().flatten().all(|v| v.is_finite()));
            let bits =
                |v: &[Vec<f32>]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
            assert_eq!(
                bits(&bert.embed_many(&seqs)),
                bits(&plain),
                "dispatched, {quantized}"
            );
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = pulp::x86::V3::try_new() {
                let got = simd.vectorize(Embed {
                    bert: &bert,
                    seqs: &seqs,
                    second: &[],
                    out: Output::MeanPooled,
                });
                assert_eq!(bits(&got), bits(&plain), "AVX2, {quantized}");
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = pulp::x86::V4::try_new() {
                let got = simd.vectorize(Embed {
                    bert: &bert,
                    seqs: &seqs,
                    second: &[],
                    out: Output::MeanPooled,
                });
                assert_eq!(bits(&got), bits(&plain), "AVX-512, {quantized}");
            }
        }
    }
}
