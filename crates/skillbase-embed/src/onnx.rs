//! The weights of an ONNX model file, read without an ONNX runtime: the graph's initializers
//! (the tensors stored in the file) and its nodes (to tell which unnamed matrix is which layer's).
//!
//! An ONNX file is one protocol-buffers message (`ModelProto`). Only the fields read here are
//! decoded; every other field is skipped by its wire type. Every length is checked against the
//! bytes that are there: a truncated or hostile file is refused with a message, never read out of
//! bounds, and nothing is allocated by a size the file claims before that many bytes are seen.
//!
//! Fields read (numbers from `onnx.proto`): `ModelProto.graph` (7); `GraphProto.node` (1) and
//! `.initializer` (5); `NodeProto.input` (1), `.output` (2), `.op_type` (4); `TensorProto.dims`
//! (1), `.data_type` (2), `.float_data` (4), `.int32_data` (5), `.name` (8), `.raw_data` (9),
//! `.data_location` (14: external data is refused).

use crate::error::EmbedError;
use std::collections::HashMap;
use std::path::Path;

/// ONNX element types read here.
pub(crate) const FLOAT: i32 = 1;
pub(crate) const UINT8: i32 = 2;
pub(crate) const INT8: i32 = 3;

/// One stored tensor.
pub(crate) struct Tensor<'a> {
    pub dims: Vec<usize>,
    pub dtype: i32,
    raw: &'a [u8],
    floats: Vec<f32>,
    ints: Vec<i64>,
}

/// One node of the graph (only what tracing a weight to its layer needs).
pub(crate) struct Node<'a> {
    pub op: &'a str,
    pub inputs: Vec<&'a str>,
    pub outputs: Vec<&'a str>,
}

/// The initializers by name and the nodes in file order.
pub(crate) struct Graph<'a> {
    pub tensors: HashMap<&'a str, Tensor<'a>>,
    pub nodes: Vec<Node<'a>>,
    path: &'a Path,
    /// The model, for messages ("the reranker").
    what: &'a str,
}

/// A quantized tensor as stored: its bytes, their type, and one scale and zero point for the
/// whole tensor or one per column.
struct Quant<'a> {
    raw: &'a [u8],
    dtype: i32,
    scales: Vec<f32>,
    zero_points: Vec<f32>,
}

/// A field's value, by wire type.
enum Val<'a> {
    Int(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
    Fixed64,
}

/// Fields of one message, in order.
struct Fields<'a> {
    data: &'a [u8],
    at: usize,
}

fn varint(data: &[u8], at: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data.get(*at).ok_or("the file ends inside a number")?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("a number is longer than ten bytes")
}

impl<'a> Fields<'a> {
    fn new(data: &'a [u8]) -> Fields<'a> {
        Fields { data, at: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or("a field runs past the end of its message")?;
        let s = &self.data[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn next_field(&mut self) -> Result<Option<(u64, Val<'a>)>, &'static str> {
        if self.at == self.data.len() {
            return Ok(None);
        }
        let key = varint(self.data, &mut self.at)?;
        let val = match key & 7 {
            0 => Val::Int(varint(self.data, &mut self.at)?),
            1 => {
                self.take(8)?;
                Val::Fixed64
            }
            2 => {
                let n = varint(self.data, &mut self.at)?;
                Val::Bytes(self.take(usize::try_from(n).map_err(|_| "a length is too large")?)?)
            }
            5 => {
                let b = self.take(4)?;
                Val::Fixed32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            _ => return Err("a field has a wire type protocol buffers do not have"),
        };
        Ok(Some((key >> 3, val)))
    }
}

fn text(b: &[u8]) -> Result<&str, &'static str> {
    std::str::from_utf8(b).map_err(|_| "a name is not UTF-8")
}

/// Packed or single varints (`repeated int64/int32`).
fn push_ints(val: Val<'_>, out: &mut Vec<i64>) -> Result<(), &'static str> {
    match val {
        Val::Int(v) => out.push(v as i64),
        Val::Bytes(b) => {
            let mut at = 0;
            while at < b.len() {
                out.push(varint(b, &mut at)? as i64);
            }
        }
        _ => return Err("an integer list has the wrong wire type"),
    }
    Ok(())
}

fn parse_tensor(data: &[u8]) -> Result<(&str, Tensor<'_>), &'static str> {
    let mut f = Fields::new(data);
    let (mut name, mut dims, mut dtype) = ("", Vec::new(), 0i32);
    let (mut raw, mut floats, mut ints): (&[u8], Vec<f32>, Vec<i64>) =
        (&[], Vec::new(), Vec::new());
    while let Some((field, val)) = f.next_field()? {
        match (field, val) {
            (1, v) => {
                let mut d = Vec::new();
                push_ints(v, &mut d)?;
                for x in d {
                    dims.push(usize::try_from(x).map_err(|_| "a tensor has a negative dimension")?);
                }
            }
            (2, Val::Int(v)) => dtype = v as i32,
            (4, Val::Fixed32(v)) => floats.push(f32::from_bits(v)),
            (4, Val::Bytes(b)) => {
                if b.len() % 4 != 0 {
                    return Err("a float list is not a whole number of floats");
                }
                floats.extend(
                    b.chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
                );
            }
            (5, v) => push_ints(v, &mut ints)?,
            (8, Val::Bytes(b)) => name = text(b)?,
            (9, Val::Bytes(b)) => raw = b,
            (14, Val::Int(1)) => return Err("a tensor is stored outside the file (external data)"),
            _ => {}
        }
    }
    Ok((
        name,
        Tensor {
            dims,
            dtype,
            raw,
            floats,
            ints,
        },
    ))
}

fn parse_node(data: &[u8]) -> Result<Node<'_>, &'static str> {
    let mut f = Fields::new(data);
    let mut node = Node {
        op: "",
        inputs: Vec::new(),
        outputs: Vec::new(),
    };
    while let Some((field, val)) = f.next_field()? {
        match (field, val) {
            (1, Val::Bytes(b)) => node.inputs.push(text(b)?),
            (2, Val::Bytes(b)) => node.outputs.push(text(b)?),
            (4, Val::Bytes(b)) => node.op = text(b)?,
            _ => {}
        }
    }
    Ok(node)
}

impl<'a> Graph<'a> {
    /// Reads the graph of the ONNX file `bytes` (`path` and `model`, as "the reranker", are
    /// only for messages).
    pub fn parse(bytes: &'a [u8], path: &'a Path, model: &'a str) -> Result<Graph<'a>, EmbedError> {
        let bad = |what: &str| {
            EmbedError::config(
                path,
                format!("{what}: not a usable ONNX model file, pull {model} again"),
            )
        };
        let mut graph = None;
        let mut f = Fields::new(bytes);
        while let Some((field, val)) = f.next_field().map_err(bad)? {
            if let (7, Val::Bytes(b)) = (field, val) {
                graph = Some(b);
            }
        }
        let graph = graph.ok_or_else(|| bad("the file holds no graph"))?;
        let mut out = Graph {
            tensors: HashMap::new(),
            nodes: Vec::new(),
            path,
            what: model,
        };
        let mut f = Fields::new(graph);
        while let Some((field, val)) = f.next_field().map_err(bad)? {
            match (field, val) {
                (1, Val::Bytes(b)) => out.nodes.push(parse_node(b).map_err(bad)?),
                (5, Val::Bytes(b)) => {
                    let (name, t) = parse_tensor(b).map_err(bad)?;
                    let count = t.dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
                    let width = match t.dtype {
                        FLOAT => 4,
                        UINT8 | INT8 => 1,
                        _ => 0,
                    };
                    // Types not read here are kept unchecked; a read type's values must fill
                    // its shape exactly.
                    let (stored, fits) = if t.raw.is_empty() {
                        let n = t.floats.len().max(t.ints.len());
                        (n, count == Some(n))
                    } else {
                        let n = t.raw.len() / width.max(1);
                        (
                            n,
                            count.and_then(|c| c.checked_mul(width)) == Some(t.raw.len()),
                        )
                    };
                    if width != 0 && !fits {
                        return Err(bad(&format!(
                            "tensor {name} holds {stored} values for its shape {:?}",
                            t.dims
                        )));
                    }
                    out.tensors.insert(name, t);
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The model, as messages name it ("the reranker").
    pub fn model(&self) -> &'a str {
        self.what
    }

    fn bad(&self, what: impl std::fmt::Display) -> EmbedError {
        EmbedError::config(
            self.path,
            format!(
                "{what}: not {} this version reads, pull {} again",
                self.what, self.what
            ),
        )
    }

    fn tensor(&self, name: &str, dtype: i32, dims: &[usize]) -> Result<&Tensor<'a>, EmbedError> {
        let t = self
            .tensors
            .get(name)
            .ok_or_else(|| self.bad(format!("tensor {name} is missing")))?;
        if t.dtype != dtype || t.dims != dims {
            return Err(self.bad(format!(
                "tensor {name} is of type {} and shape {:?}, expected type {dtype} and shape {dims:?}",
                t.dtype, t.dims
            )));
        }
        Ok(t)
    }

    /// The float tensor `name` of shape `dims`, every value finite.
    pub fn floats(&self, name: &str, dims: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let t = self.tensor(name, FLOAT, dims)?;
        let v: Vec<f32> = if t.raw.is_empty() {
            t.floats.clone()
        } else {
            t.raw
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        if v.iter().any(|x| !x.is_finite()) {
            return Err(self.bad(format!("tensor {name} holds a value that is not finite")));
        }
        Ok(v)
    }

    /// The quantized tensor stored as `{base}_quantized`, `{base}_scale` and
    /// `{base}_zero_point` (as `onnxruntime`'s dynamic quantization writes it): its bytes, its
    /// element type, and its scales and zero points: one of each for the whole tensor, or, for
    /// a matrix quantized per channel, one per column (its last dimension).
    fn quantized(&self, base: &str, dims: &[usize]) -> Result<Quant<'a>, EmbedError> {
        let name = format!("{base}_quantized");
        let dtype = self
            .tensors
            .get(name.as_str())
            .ok_or_else(|| self.bad(format!("tensor {name} is missing")))?
            .dtype;
        if dtype != UINT8 && dtype != INT8 {
            return Err(self.bad(format!("tensor {name} is not 8-bit")));
        }
        let q = self.tensor(&name, dtype, dims)?;
        let scale_name = format!("{base}_scale");
        let per_channel = dims.len() == 2
            && self
                .tensors
                .get(scale_name.as_str())
                .is_some_and(|t| !t.dims.is_empty());
        let shape: &[usize] = if per_channel { &dims[1..] } else { &[] };
        let scales = self.floats(&scale_name, shape)?;
        if scales.iter().any(|s| *s <= 0.0) {
            return Err(self.bad(format!("scale {scale_name} is not a positive number")));
        }
        let zp_name = format!("{base}_zero_point");
        let zp_t = self.tensor(&zp_name, dtype, shape)?;
        let value = |b: u8| {
            if dtype == INT8 {
                f32::from(b as i8)
            } else {
                f32::from(b)
            }
        };
        let zero_points: Vec<f32> = if zp_t.raw.is_empty() {
            zp_t.ints.iter().map(|&v| value(v as u8)).collect()
        } else {
            zp_t.raw.iter().map(|&b| value(b)).collect()
        };
        if zero_points.len() != scales.len() {
            return Err(self.bad(format!(
                "zero point {zp_name} holds {} values for {} scales",
                zero_points.len(),
                scales.len()
            )));
        }
        Ok(Quant {
            raw: q.raw,
            dtype,
            scales,
            zero_points,
        })
    }

    /// The quantized tensor `base` (see [`Graph::quantized`]) as floats: `(q − zero point) ·
    /// scale`, each column by its own when the matrix is quantized per channel.
    pub fn dequantized(&self, base: &str, dims: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let q = self.quantized(base, dims)?;
        let value = |b: u8| {
            if q.dtype == INT8 {
                f32::from(b as i8)
            } else {
                f32::from(b)
            }
        };
        let k = q.scales.len();
        Ok(q.raw
            .iter()
            .enumerate()
            .map(|(i, &b)| (value(b) - q.zero_points[i % k]) * q.scales[i % k])
            .collect())
    }

    /// The unsigned 8-bit tensor `base` as it is stored: its bytes, scale and zero point.
    pub fn unsigned(&self, base: &str, dims: &[usize]) -> Result<(Vec<u8>, f32, f32), EmbedError> {
        let q = self.quantized(base, dims)?;
        if q.dtype != UINT8 {
            return Err(self.bad(format!("tensor {base}_quantized is not unsigned")));
        }
        if q.scales.len() != 1 {
            return Err(self.bad(format!("tensor {base}_quantized has a scale per column")));
        }
        Ok((q.raw.to_vec(), q.scales[0], q.zero_points[0]))
    }

    /// Every quantized matrix followed to the layer whose bias is added to its product: the
    /// graph's `MatMulInteger → Cast → Mul → Add(bias)` chain from `{base}_quantized`, keyed by
    /// the bias's name less `.bias` (for example `bert.encoder.layer.0.attention.self.query`),
    /// the value the matrix's `base`. A matrix whose chain is anything else is left out.
    pub fn matrices_by_layer(&self) -> HashMap<&'a str, &'a str> {
        let mut consumers: HashMap<&str, Vec<&Node<'a>>> = HashMap::new();
        for n in &self.nodes {
            for i in &n.inputs {
                consumers.entry(i).or_default().push(n);
            }
        }
        let mut out = HashMap::new();
        for name in self.tensors.keys() {
            let Some(base) = name.strip_suffix("_quantized") else {
                continue;
            };
            let mut at: &str = name;
            for _ in 0..4 {
                let Some([node]) = consumers.get(at).map(Vec::as_slice) else {
                    break;
                };
                if node.op == "Add" {
                    if let Some(layer) = node
                        .inputs
                        .iter()
                        .find(|i| self.tensors.contains_key(*i))
                        .and_then(|b| b.strip_suffix(".bias"))
                    {
                        out.insert(layer, base);
                    }
                    break;
                }
                if !matches!(node.op, "MatMulInteger" | "Cast" | "Mul") {
                    break;
                }
                let Some(o) = node.outputs.first() else { break };
                at = o;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A protocol-buffers writer for the tests' files.
    fn key(field: u64, wire: u64, out: &mut Vec<u8>) {
        int(field << 3 | wire, out);
    }
    fn int(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    fn bytes(field: u64, b: &[u8], out: &mut Vec<u8>) {
        key(field, 2, out);
        int(b.len() as u64, out);
        out.extend_from_slice(b);
    }
    fn node(op: &str, inputs: &[&str], output: &str) -> Vec<u8> {
        let mut n = Vec::new();
        for i in inputs {
            bytes(1, i.as_bytes(), &mut n);
        }
        bytes(2, output.as_bytes(), &mut n);
        bytes(4, op.as_bytes(), &mut n);
        n
    }
    /// A tensor: `raw` bytes, or (when `raw` is `None`) one float (`float_data`, unpacked) or
    /// one integer (`int32_data`).
    fn tensor(
        name: &str,
        dtype: u64,
        dims: &[u64],
        raw: Option<&[u8]>,
        scalar: Option<f32>,
    ) -> Vec<u8> {
        let mut t = Vec::new();
        for &d in dims {
            key(1, 0, &mut t);
            int(d, &mut t);
        }
        key(2, 0, &mut t);
        int(dtype, &mut t);
        match (raw, scalar) {
            (Some(r), _) => bytes(9, r, &mut t),
            (None, Some(f)) if dtype == 1 => {
                key(4, 5, &mut t);
                t.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            (None, Some(f)) => {
                key(5, 0, &mut t);
                int(f as i64 as u64, &mut t);
            }
            (None, None) => {}
        }
        bytes(8, name.as_bytes(), &mut t);
        t
    }

    /// A graph as `onnxruntime`'s dynamic quantization writes one linear layer: `W` (int8,
    /// 2 × 3, zero point −1, scale 0.5) feeding `layer.x`'s bias through MatMulInteger, Cast,
    /// Mul and Add; an unrelated quantized matrix `V` whose product goes elsewhere.
    fn model() -> Vec<u8> {
        let mut g = Vec::new();
        let w: Vec<u8> = [1i8, -1, 3, 0, -128, 127]
            .iter()
            .map(|&v| v as u8)
            .collect();
        for t in [
            tensor("W_quantized", 3, &[2, 3], Some(&w), None),
            tensor("W_scale", 1, &[], None, Some(0.5)),
            tensor("W_zero_point", 3, &[], None, Some(-1.0)),
            tensor("layer.x.bias", 1, &[3], Some(&[0u8; 12]), None),
            tensor("V_quantized", 2, &[1, 1], Some(&[7]), None),
            tensor("V_scale", 1, &[], None, Some(2.0)),
            tensor("V_zero_point", 2, &[], Some(&[3]), None),
        ] {
            bytes(5, &t, &mut g);
        }
        for n in [
            node(
                "MatMulInteger",
                &["a_q", "W_quantized", "a_zp", "W_zero_point"],
                "p",
            ),
            node("Cast", &["p"], "c"),
            node("Mul", &["c", "scales"], "m"),
            node("Add", &["layer.x.bias", "m"], "out"),
            node("MatMulInteger", &["a_q", "V_quantized"], "v"),
            node("Relu", &["v"], "r"),
        ] {
            bytes(1, &n, &mut g);
        }
        let mut m = Vec::new();
        key(1, 0, &mut m); // ir_version, skipped
        int(7, &mut m);
        bytes(7, &g, &mut m);
        m
    }

    /// A matrix quantized per channel (one scale and zero point per column, as bge-small-en-v1.5's
    /// file has): each column is expanded by its own; a scale or zero point of the wrong length
    /// is refused, and so is a per-channel table read as unsigned bytes.
    #[test]
    fn a_matrix_quantized_per_channel_uses_each_columns_scale() {
        let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let w: Vec<u8> = [1i8, -1, 3, 0, -128, 127]
            .iter()
            .map(|&v| v as u8)
            .collect();
        let build = |scales: &[f32], zps: &[i8]| {
            let zp: Vec<u8> = zps.iter().map(|&v| v as u8).collect();
            let mut g = Vec::new();
            for t in [
                tensor("W_quantized", 3, &[2, 3], Some(&w), None),
                tensor("W_scale", 1, &[scales.len() as u64], Some(&f(scales)), None),
                tensor("W_zero_point", 3, &[zps.len() as u64], Some(&zp), None),
            ] {
                bytes(5, &t, &mut g);
            }
            let mut m = Vec::new();
            bytes(7, &g, &mut m);
            m
        };
        let path = Path::new("model.onnx");
        let good = build(&[0.5, 1.0, 2.0], &[0, 1, -1]);
        let g = Graph::parse(&good, path, "the model").unwrap();
        // Row 0: (1−0)·0.5, (−1−1)·1, (3+1)·2; row 1: (0−0)·0.5, (−128−1)·1, (127+1)·2.
        assert_eq!(
            g.dequantized("W", &[2, 3]).unwrap(),
            [0.5, -2.0, 8.0, 0.0, -129.0, 256.0]
        );
        for (bad, why) in [
            (build(&[0.5, 1.0], &[0, 1]), "shape"),
            (build(&[0.5, 1.0, 2.0], &[0, 1]), "shape"),
            (build(&[0.5, 0.0, 2.0], &[0, 1, 2]), "not a positive number"),
        ] {
            let g = Graph::parse(&bad, path, "the model").unwrap();
            let err = g.dequantized("W", &[2, 3]).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.contains("pull the model again"),
                "{err}"
            );
        }
        let unsigned = build(&[0.5, 1.0, 2.0], &[0, 1, 2]);
        let g = Graph::parse(&unsigned, path, "the model").unwrap();
        assert!(g.unsigned("W", &[2, 3]).is_err());
    }

    #[test]
    fn reads_initializers_and_follows_a_matrix_to_its_layer() {
        let bytes = model();
        let path = Path::new("model.onnx");
        let g = Graph::parse(&bytes, path, "the reranker").unwrap();
        assert_eq!(g.nodes.len(), 6);
        // (q − zero point) · scale, row-major as stored.
        assert_eq!(
            g.dequantized("W", &[2, 3]).unwrap(),
            [1.0, -0.0, 2.0, 0.5, -63.5, 64.0]
        );
        assert_eq!(g.unsigned("V", &[1, 1]).unwrap(), (vec![7], 2.0, 3.0));
        assert_eq!(g.floats("layer.x.bias", &[3]).unwrap(), [0.0; 3]);
        let layers = g.matrices_by_layer();
        assert_eq!(layers.len(), 1, "V's product feeds no bias");
        assert_eq!(layers["layer.x"], "W");
        // Asked with the wrong shape or type: refused, naming the tensor.
        let err = g.dequantized("W", &[3, 2]).unwrap_err().to_string();
        assert!(
            err.contains("W_quantized") && err.contains("[2, 3]"),
            "{err}"
        );
        assert!(g.unsigned("W", &[2, 3]).is_err());
        assert!(
            g.floats("missing", &[1])
                .unwrap_err()
                .to_string()
                .contains("missing")
        );
    }

    #[test]
    fn every_cut_of_a_file_is_refused_or_read_never_a_panic() {
        let bytes = model();
        let path = Path::new("model.onnx");
        for n in 0..bytes.len() {
            // A cut inside the graph's length prefix or body fails; a cut at a field boundary
            // of the model message reads as a model without a graph, which fails too.
            let err = Graph::parse(&bytes[..n], path, "the reranker").err();
            assert!(err.is_some(), "a cut at {n} of {} was read", bytes.len());
        }
        // Flipped bytes: whatever they mean, no panic.
        for i in 0..bytes.len() {
            for x in [0x00, 0x80, 0xff] {
                let mut b = bytes.clone();
                b[i] = x;
                if let Ok(g) = Graph::parse(&b, path, "the reranker") {
                    let _ = g.matrices_by_layer();
                    let _ = g.dequantized("W", &[2, 3]);
                }
            }
        }
    }

    #[test]
    fn hostile_fields_are_refused_with_a_message() {
        let path = Path::new("evil.onnx");
        let refused = |bytes: &[u8], want: &str| {
            let err = Graph::parse(bytes, path, "the reranker")
                .err()
                .expect("refused")
                .to_string();
            assert!(err.contains(want) && err.contains("evil.onnx"), "{err}");
        };
        // A length far past the end (no allocation by it), an endless number, a wire type
        // protocol buffers do not have.
        let mut huge = Vec::new();
        key(7, 2, &mut huge);
        int(u64::MAX >> 1, &mut huge);
        refused(&huge, "runs past the end");
        refused(
            &[
                0x38, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ],
            "longer than ten bytes",
        );
        refused(&[0x3b], "wire type");
        // A tensor whose data does not fill its shape, one stored in another file.
        let mut g = Vec::new();
        bytes(5, &tensor("t", 1, &[4, 4], Some(&[0u8; 12]), None), &mut g);
        let mut m = Vec::new();
        bytes(7, &g, &mut m);
        refused(&m, "tensor t holds 3 values for its shape [4, 4]");
        let mut t = tensor("ext", 1, &[1], None, None);
        key(14, 0, &mut t);
        int(1, &mut t);
        let mut g = Vec::new();
        bytes(5, &t, &mut g);
        let mut m = Vec::new();
        bytes(7, &g, &mut m);
        refused(&m, "external data");
        // A name that is not UTF-8.
        let mut g = Vec::new();
        bytes(1, &node("Add", &[], "\u{fffd}"), &mut g);
        let mut n = Vec::new();
        bytes(1, &[0xc3, 0x28], &mut n);
        bytes(1, &n, &mut g);
        let mut m = Vec::new();
        bytes(7, &g, &mut m);
        refused(&m, "not UTF-8");
        // A scale that is not a positive number.
        let mut g = Vec::new();
        for t in [
            tensor("S_quantized", 2, &[1], Some(&[1]), None),
            tensor("S_scale", 1, &[], None, Some(-1.0)),
            tensor("S_zero_point", 2, &[], Some(&[0]), None),
        ] {
            bytes(5, &t, &mut g);
        }
        let mut m = Vec::new();
        bytes(7, &g, &mut m);
        let g = Graph::parse(&m, path, "the reranker").unwrap();
        let err = g.dequantized("S", &[1]).unwrap_err().to_string();
        assert!(err.contains("S_scale is not a positive number"), "{err}");
    }
}
