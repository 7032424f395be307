//! Quantized matrix products: the fast path of the forward pass.
//!
//! A linear layer's weights are quantized once, at load, per output row to 7-bit integers
//! (`-63..=63`, one f32 scale per row, [`QMatrix`]); a layer's input is quantized per token to
//! 8-bit unsigned integers with a zero point (one scale and one zero point per token,
//! [`QActs`]). The product of the two is exact integer arithmetic:
//!
//! `y[t][n] = s_a[t] · s_w[n] · (Σ_k a[t][k] · w[n][k] − z[t] · Σ_k w[n][k]) + bias[n]`
//!
//! The weights are packed in panels of [`PANEL`] output rows: for each group of [`GROUP`]
//! inputs, the panel's 16 rows × 4 weights lie side by side (64 bytes). On x86-64 with AVX2 one
//! token's 4 inputs are broadcast to every lane and meet the 16 rows' 4 weights at once:
//! `vpmaddubsw` (unsigned × signed bytes, summed in pairs to 16 bits) then `vpmaddwd` (pairs to
//! 32 bits) leave each lane the running sum of one output, so a tile of tokens × 16 outputs is
//! accumulated in registers and stored as is, with no sum across lanes at the end (the first
//! kernel summed each output's eight lanes, a fifth of its time at 384 inputs). The 7-bit
//! weights keep a pair of products (at most 255 · 63 · 2 = 32,130) inside the 16 bits
//! `vpmaddubsw` saturates at. With AVX-512BW one register holds the panel's 16 sums (tiles of
//! up to 8 tokens). With VNNI one `vpdpbusd` does what those three instructions do, on 512-bit
//! (AVX512-VNNI) or 256-bit (AVX-VNNI) registers ([`vnni`], the crate's one `unsafe` module). Elsewhere a plain loop computes the same
//! integers, so every machine gets identical results; the CPU's features are detected at run
//! time (`pulp`'s safe wrappers, and the standard library's detection for VNNI).
//!
//! Measured in the runtime's first index on the 2-core development machines: a third less CPU
//! per skill than the first kernel (AVX2, blocks of 32 inputs per output summed across lanes at
//! the end) on a Xeon; VNNI and the vectorised quantization of activations another third less
//! on an EPYC (Zen 4); BENCHMARKS.md, "Semantic indexing speed".

use crate::math::tree;

/// Largest weight magnitude after quantization (7 bits, see the module documentation).
pub(crate) const WMAX: f32 = 63.0;
/// Output rows per panel of packed weights (16 lanes of 32 bits: two AVX2 registers).
pub(crate) const PANEL: usize = 16;
/// Inputs per group: one token's 4 bytes are broadcast against 4 weights of each row.
pub(crate) const GROUP: usize = 4;
/// Bytes of one panel's weights for one group of inputs.
const PANEL_GROUP: usize = PANEL * GROUP;

/// A `rows × cols` weight matrix (PyTorch's `[out, in]`), quantized per row, with its bias.
pub(crate) struct QMatrix {
    rows: usize,
    cols: usize,
    /// `cols` rounded up to [`GROUP`]: the groups each row holds.
    groups: usize,
    /// Panels of [`PANEL`] rows (the last one padded with zero rows), each `groups` blocks of
    /// 16 rows × 4 weights: weight `(n, k)` is at [`QMatrix::at`]. Padding weights are 0.
    w: Vec<i8>,
    scale: Vec<f32>,
    /// Per row, the sum of its quantized weights (for the activations' zero point).
    wsum: Vec<i32>,
    bias: Vec<f32>,
}

impl QMatrix {
    /// Quantizes row-major f32 weights (`rows × cols`) and keeps `bias` (`rows` values).
    pub fn new(weights: &[f32], rows: usize, cols: usize, bias: &[f32]) -> QMatrix {
        debug_assert_eq!(weights.len(), rows * cols);
        debug_assert_eq!(bias.len(), rows);
        let groups = cols.div_ceil(GROUP);
        let panels = rows.div_ceil(PANEL);
        let mut m = QMatrix {
            rows,
            cols,
            groups,
            w: vec![0i8; panels * groups * PANEL_GROUP],
            scale: vec![0f32; rows],
            wsum: vec![0i32; rows],
            bias: bias.to_vec(),
        };
        for r in 0..rows {
            let row = &weights[r * cols..(r + 1) * cols];
            let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = if max > 0.0 { max / WMAX } else { 1.0 };
            let inv = 1.0 / s;
            let mut sum = 0i32;
            for (k, v) in row.iter().enumerate() {
                let q = (v * inv).round().clamp(-WMAX, WMAX) as i8;
                let at = m.at(r, k);
                m.w[at] = q;
                sum += i32::from(q);
            }
            m.scale[r] = s;
            m.wsum[r] = sum;
        }
        m
    }

    /// Where weight `(n, k)` is in the packed [`QMatrix::w`].
    #[inline(always)]
    fn at(&self, n: usize, k: usize) -> usize {
        ((n / PANEL * self.groups + k / GROUP) * PANEL + n % PANEL) * GROUP + k % GROUP
    }

    /// Panel `p`'s weights: per group of inputs, its 16 rows × 4 weights.
    #[inline(always)]
    fn panel(&self, p: usize) -> &[[i8; PANEL_GROUP]] {
        self.w[p * self.groups * PANEL_GROUP..][..self.groups * PANEL_GROUP]
            .as_chunks()
            .0
    }

    /// Stores a tile's sums: `sums[c]` holds token `t0 + c`'s 16 outputs of panel `p` (those
    /// past the last row are padding, dropped).
    #[inline(always)]
    fn store<const C: usize>(&self, acc: &mut [i32], p: usize, t0: usize, sums: [[i32; PANEL]; C]) {
        let n0 = p * PANEL;
        let take = (self.rows - n0).min(PANEL);
        for (c, s) in sums.iter().enumerate() {
            let to = &mut acc[(t0 + c) * self.rows + n0..][..take];
            // A whole panel as one copy of known length (inlined; a slice's length made it a
            // `memmove` call per token).
            match <&mut [i32; PANEL]>::try_from(&mut *to) {
                Ok(whole) => *whole = *s,
                Err(_) => to.copy_from_slice(&s[..take]),
            }
        }
    }

    /// Output size.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.w.len() + 4 * (self.scale.len() + self.wsum.len() + self.bias.len())
    }

    /// `out[t][n] = x[t] · w[n] + bias[n]` for every token `t` of `x` (`out` is
    /// `x.tokens() × rows`, row-major).
    #[cfg(test)]
    pub fn forward(&self, x: &QActs, out: &mut [f32]) {
        self.forward_in(x, out, &mut Vec::new());
    }

    /// `out[t][n] = x[t] · w[n] + bias[n]` for every token `t` of `x` (`out` is `x.tokens() ×
    /// rows`, row-major), with the products' sums in `acc`, grown as needed and never
    /// cleared: every sum is written before it is read, so a forward pass reuses one buffer
    /// for all its layers.
    #[inline(always)]
    pub fn forward_in(&self, x: &QActs, out: &mut [f32], acc: &mut Vec<i32>) {
        debug_assert_eq!(x.cols, self.cols);
        debug_assert_eq!(out.len(), x.tokens * self.rows);
        let len = x.tokens * self.rows;
        if acc.len() < len {
            acc.resize(len, 0);
        }
        let acc = &mut acc[..len];
        dot_all(x, self, acc);
        for t in 0..x.tokens {
            let (sa, z) = (x.scale[t], x.zero[t]);
            let row = &mut out[t * self.rows..(t + 1) * self.rows];
            let a = &acc[t * self.rows..(t + 1) * self.rows];
            // |a| and |z · wsum| are at most cols · 255 · 63 (25 M for 1,536 inputs): i32 holds
            // their difference for any layer up to 130,000 inputs wide.
            for ((((o, &a), &ws), &sw), &b) in row
                .iter_mut()
                .zip(a)
                .zip(&self.wsum)
                .zip(&self.scale)
                .zip(&self.bias)
            {
                *o = sa * sw * (a - z * ws) as f32 + b;
            }
        }
    }
}

/// A layer's input, quantized per token to unsigned bytes with a zero point.
pub(crate) struct QActs {
    tokens: usize,
    cols: usize,
    /// `cols` rounded up to [`GROUP`] (the padding inputs are 0, their weights too).
    stride: usize,
    q: Vec<u8>,
    scale: Vec<f32>,
    zero: Vec<i32>,
}

impl QActs {
    /// Tokens `t0..t0 + C`, each as its groups of 4 bytes.
    #[inline(always)]
    fn tokens_from<const C: usize>(&self, t0: usize) -> [&[[u8; GROUP]]; C] {
        std::array::from_fn(|c| {
            self.q[(t0 + c) * self.stride..][..self.stride]
                .as_chunks()
                .0
        })
    }

    /// Quantizes `x` (`tokens × cols`, row-major).
    #[cfg(test)]
    pub fn new(x: &[f32], tokens: usize, cols: usize) -> QActs {
        QActs::new_in(x, tokens, cols, Vec::new())
    }

    /// Quantizes `x` (`tokens × cols`, row-major) into `q`, a buffer grown as needed and never
    /// cleared (a forward pass passes the one [`QActs::into_bytes`] gave back): every byte a
    /// product reads is written here, but for the padding inputs past `cols`, whose weights
    /// are 0.
    #[inline(always)]
    pub fn new_in(x: &[f32], tokens: usize, cols: usize, mut q: Vec<u8>) -> QActs {
        debug_assert_eq!(x.len(), tokens * cols);
        let stride = cols.div_ceil(GROUP) * GROUP;
        if q.len() < tokens * stride {
            q.resize(tokens * stride, 0);
        }
        let mut scale = vec![0f32; tokens];
        let mut zero = vec![0i32; tokens];
        for t in 0..tokens {
            let row = &x[t * cols..(t + 1) * cols];
            // The range always holds 0, so 0 is represented exactly (the zero point). Lanes of
            // minima and maxima, so that the scan vectorises: 32, two AVX-512 registers each
            // (eight packed the minima and maxima into one register, a chain of compares and
            // blends through it). Minima and maxima do not depend on the order they are taken
            // in, so any number of lanes gives the same range.
            let (mut lo32, mut hi32) = ([0f32; 32], [0f32; 32]);
            let (chunks, rest) = row.as_chunks::<32>();
            for c in chunks {
                for (lo, &v) in lo32.iter_mut().zip(c) {
                    *lo = if v < *lo { v } else { *lo };
                }
                for (hi, &v) in hi32.iter_mut().zip(c) {
                    *hi = if v > *hi { v } else { *hi };
                }
            }
            let lo = tree(lo32, |a, b| if b < a { b } else { a });
            let hi = tree(hi32, |a, b| if b > a { b } else { a });
            let (lo, hi) = rest
                .iter()
                .fold((lo, hi), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            let s = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
            // Rounding by `+ 0.5` and a truncating cast: `f32::round` is a libm call per value
            // on x86-64 without SSE4.1, which cost more than the products themselves.
            let z = ((-lo / s + 0.5) as i32).clamp(0, 255) as f32;
            let inv = 1.0 / s;
            let out = &mut q[t * stride..t * stride + cols];
            // `y as u8` (y in 0..=255) is compiled lane by lane (extract, convert, check the
            // range, insert a byte): a quarter of the element-wise work of a forward pass. The
            // same byte with vector operations only: round by adding 2^23, step down where that
            // rounded up (the floor, which the cast truncates to), and read the integer from
            // the low bits of `floor + 2^23`.
            const MAGIC: f32 = 8_388_608.0;
            for (o, v) in out.iter_mut().zip(row) {
                let y = (v * inv + z + 0.5).clamp(0.0, 255.0);
                let r = (y + MAGIC) - MAGIC;
                let floor = if r > y { r - 1.0 } else { r };
                *o = (floor + MAGIC).to_bits() as u8;
            }
            scale[t] = s;
            zero[t] = z as i32;
        }
        QActs {
            tokens,
            cols,
            stride,
            q,
            scale,
            zero,
        }
    }
}

impl QActs {
    /// The bytes' buffer, for the next layer's [`QActs::new_in`].
    pub fn into_bytes(self) -> Vec<u8> {
        self.q
    }
}

/// Buffers a forward pass reuses from one linear layer to the next: the products' sums and the
/// activations' bytes (allocated and zeroed per layer, they were 2–3% of a first index).
#[derive(Default)]
pub(crate) struct Scratch {
    acc: Vec<i32>,
    q: Vec<u8>,
}

impl Scratch {
    /// `out = x · wᵀ + b` for the `tokens` rows of `x` through `m`, in this scratch.
    #[inline(always)]
    pub fn forward(&mut self, m: &QMatrix, x: &[f32], tokens: usize, cols: usize, out: &mut [f32]) {
        let a = QActs::new_in(x, tokens, cols, std::mem::take(&mut self.q));
        m.forward_in(&a, out, &mut self.acc);
        self.q = a.into_bytes();
    }
}

/// The walk every SIMD kernel makes: panel by panel (a panel's weights stay in the L1 cache
/// across every token), in tiles of up to `$max` tokens, calling `$tile::<C>(args…, p, t0)`
/// for panel `p`'s tile of `C` tokens from `t0`. A macro, not a function, so that the tiles are
/// compiled inside the caller's `#[target_feature]` function and inlined there.
macro_rules! tiles {
    ($m:expr, $tokens:expr, $tile:ident $args:tt, [$max:literal $(, $n:literal)*]) => {
        for p in 0..$m.rows.div_ceil(PANEL) {
            let mut t0 = 0;
            while t0 < $tokens {
                let count = ($tokens - t0).min($max);
                match count {
                    $max => tiles!(@tile $tile $args $max, p, t0),
                    $($n => tiles!(@tile $tile $args $n, p, t0),)*
                    _ => tiles!(@tile $tile $args 1, p, t0),
                }
                t0 += count;
            }
        }
    };
    (@tile $tile:ident ($($arg:expr),*) $n:literal, $p:ident, $t0:ident) => {
        $tile::<$n>($($arg,)* $p, $t0)
    };
}

/// The kernels of the integer products, fastest first; [`Kernel::detect`] picks the first this
/// CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// `vpdpbusd` on 512-bit registers.
    Avx512Vnni,
    /// `vpdpbusd` on 256-bit registers (Intel's client CPUs from Alder Lake on).
    AvxVnni,
    /// `vpmaddubsw` and `vpmaddwd` on 512-bit registers.
    Avx512Bw,
    /// The same on 256-bit registers.
    Avx2,
    /// A plain loop.
    Portable,
}

impl Kernel {
    /// The fastest kernel this CPU runs (the features are read once and cached by the standard
    /// library and `pulp`).
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if vnni::available512() {
                return Kernel::Avx512Vnni;
            }
            if vnni::available256() {
                return Kernel::AvxVnni;
            }
            if pulp::x86::V4::try_new().is_some() {
                return Kernel::Avx512Bw;
            }
            if pulp::x86::V3::try_new().is_some() {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    /// Its name, as `skillbase model status` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Avx512Vnni => "AVX512-VNNI",
            Kernel::AvxVnni => "AVX-VNNI",
            Kernel::Avx512Bw => "AVX-512BW",
            Kernel::Avx2 => "AVX2",
            Kernel::Portable => "portable loop",
        }
    }
}

/// `acc[t][n] = Σ_k x.q[t][k] · m.w[n][k]`, exactly, on every machine.
fn dot_all(x: &QActs, m: &QMatrix, acc: &mut [i32]) {
    debug_assert_eq!(x.stride, m.groups * GROUP);
    #[cfg(target_arch = "x86_64")]
    match Kernel::detect() {
        Kernel::Avx512Vnni if vnni::dot_all512(x, m, acc) => return,
        Kernel::AvxVnni if vnni::dot_all256(x, m, acc) => return,
        Kernel::Avx512Bw => {
            if let Some(simd) = pulp::x86::V4::try_new() {
                simd.vectorize(avx512::Tiles { simd, x, m, acc });
                return;
            }
        }
        Kernel::Avx2 => {
            if let Some(simd) = pulp::x86::V3::try_new() {
                simd.vectorize(avx2::Tiles { simd, x, m, acc });
                return;
            }
        }
        _ => {}
    }
    dot_all_plain(x, m, acc);
}

/// The portable product (also the reference the AVX2 one is tested against).
fn dot_all_plain(x: &QActs, m: &QMatrix, acc: &mut [i32]) {
    for t in 0..x.tokens {
        let a = &x.q[t * x.stride..(t + 1) * x.stride];
        for n in 0..m.rows {
            acc[t * m.rows + n] = a
                .iter()
                .enumerate()
                .map(|(k, &a)| i32::from(a) * i32::from(m.w[m.at(n, k)]))
                .sum();
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{PANEL, PANEL_GROUP, QActs, QMatrix};
    use core::arch::x86_64::__m256i;
    use pulp::x86::V3;

    /// The whole product ([`tiles!`]) in tiles of up to 5 tokens: a tile's 5 tokens × 16
    /// outputs are 10 registers of sums.
    pub(super) struct Tiles<'a> {
        pub simd: V3,
        pub x: &'a QActs,
        pub m: &'a QMatrix,
        pub acc: &'a mut [i32],
    }

    impl pulp::NullaryFnOnce for Tiles<'_> {
        type Output = ();

        #[inline(always)]
        fn call(self) {
            let Tiles { simd, x, m, acc } = self;
            tiles!(m, x.tokens, tile(simd, x, m, acc), [5, 4, 3, 2]);
        }
    }

    /// Panel `p`'s 16 outputs for tokens `t0..t0 + C`.
    #[inline(always)]
    fn tile<const C: usize>(
        simd: V3,
        x: &QActs,
        m: &QMatrix,
        acc: &mut [i32],
        p: usize,
        t0: usize,
    ) {
        let avx2 = simd.avx2;
        let zero = simd.avx._mm256_setzero_si256();
        let ones = simd.avx._mm256_set1_epi16(1);
        let groups = m.groups;
        // Whole groups of one length, so the loop's index checks fold away.
        let w: &[[[i8; PANEL_GROUP / 2]; 2]] = m.w[p * groups * PANEL_GROUP..]
            [..groups * PANEL_GROUP]
            .as_chunks::<{ PANEL_GROUP / 2 }>()
            .0
            .as_chunks::<2>()
            .0;
        let a = x.tokens_from::<C>(t0);
        assert!(w.len() == groups && a.iter().all(|r| r.len() == groups));
        let mut lo = [zero; C];
        let mut hi = [zero; C];
        for g in 0..groups {
            let wl: __m256i = pulp::cast(w[g][0]);
            let wh: __m256i = pulp::cast(w[g][1]);
            for c in 0..C {
                let b = simd.avx._mm256_set1_epi32(i32::from_le_bytes(a[c][g]));
                let pl = avx2._mm256_maddubs_epi16(b, wl);
                let ph = avx2._mm256_maddubs_epi16(b, wh);
                lo[c] = avx2._mm256_add_epi32(lo[c], avx2._mm256_madd_epi16(pl, ones));
                hi[c] = avx2._mm256_add_epi32(hi[c], avx2._mm256_madd_epi16(ph, ones));
            }
        }
        m.store::<C>(
            acc,
            p,
            t0,
            std::array::from_fn(|c| pulp::cast([lo[c], hi[c]])),
        );
    }
}

/// The same product with AVX-512BW: one register holds a panel's 16 sums.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{PANEL, QActs, QMatrix};
    use core::arch::x86_64::__m512i;
    use pulp::x86::V4;

    /// The whole product ([`tiles!`]) in tiles of up to 8 tokens, one register of sums each.
    pub(super) struct Tiles<'a> {
        pub simd: V4,
        pub x: &'a QActs,
        pub m: &'a QMatrix,
        pub acc: &'a mut [i32],
    }

    impl pulp::NullaryFnOnce for Tiles<'_> {
        type Output = ();

        #[inline(always)]
        fn call(self) {
            let Tiles { simd, x, m, acc } = self;
            tiles!(m, x.tokens, tile(simd, x, m, acc), [8, 7, 6, 5, 4, 3, 2]);
        }
    }

    /// Panel `p`'s 16 outputs for tokens `t0..t0 + C`.
    #[inline(always)]
    fn tile<const C: usize>(
        simd: V4,
        x: &QActs,
        m: &QMatrix,
        acc: &mut [i32],
        p: usize,
        t0: usize,
    ) {
        let (f, bw) = (simd.avx512f, simd.avx512bw);
        let zero = f._mm512_setzero_si512();
        let ones = f._mm512_set1_epi16(1);
        let groups = m.groups;
        let w = m.panel(p);
        let a = x.tokens_from::<C>(t0);
        assert!(w.len() == groups && a.iter().all(|r| r.len() == groups));
        let mut sums = [zero; C];
        for g in 0..groups {
            let wv: __m512i = pulp::cast(w[g]);
            for c in 0..C {
                let b = f._mm512_set1_epi32(i32::from_le_bytes(a[c][g]));
                let pairs = bw._mm512_maddubs_epi16(b, wv);
                sums[c] = f._mm512_add_epi32(sums[c], bw._mm512_madd_epi16(pairs, ones));
            }
        }
        m.store(acc, p, t0, sums.map(pulp::cast));
    }
}

/// The same product with VNNI: `vpdpbusd` multiplies a token's 4 unsigned bytes by a row's 4
/// signed weights and adds the four products to the row's 32-bit sum in one instruction, where
/// AVX-512BW and AVX2 need three (`vpmaddubsw`, `vpmaddwd`, `vpaddd`). The sums do not pass
/// through 16 bits, so they are the same integers as every other kernel's. Two encodings:
/// AVX512-VNNI (one 512-bit register per panel; servers, Zen 4 and later) and AVX-VNNI (the
/// same instruction on 256-bit registers, two per panel; Intel's client CPUs from Alder Lake on,
/// which have no AVX-512).
///
/// `pulp` has no wrapper for `vpdpbusd`, so this module is the crate's one exception to its
/// `unsafe` ban: two calls of `#[target_feature]` functions, each made only after the CPU has
/// been seen to have every one of its features. Inside them every intrinsic is safe (none takes
/// a pointer; the weights and activations are read as arrays and cast by value).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod vnni {
    use super::{PANEL, PANEL_GROUP, QActs, QMatrix};
    use core::arch::x86_64::{
        __m256i, __m512i, _mm256_dpbusd_avx_epi32, _mm256_set1_epi32, _mm256_setzero_si256,
        _mm512_dpbusd_epi32, _mm512_set1_epi32, _mm512_setzero_si512,
    };

    /// Whether this CPU runs [`product512`] (the answer is cached by the standard library).
    pub(super) fn available512() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }

    /// Whether this CPU runs [`product256`].
    pub(super) fn available256() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("avxvnni")
    }

    /// The product with AVX512-VNNI, when the CPU has it.
    pub(super) fn dot_all512(x: &QActs, m: &QMatrix, acc: &mut [i32]) -> bool {
        if !available512() {
            return false;
        }
        // SAFETY: `product512` is compiled for avx512f, avx512bw and avx512vnni, and the CPU
        // was seen to have all three just above; it holds no other `unsafe` and takes only
        // references, which the borrow checker has vetted.
        unsafe { product512(x, m, acc) };
        true
    }

    /// The product with AVX-VNNI (256 bits), when the CPU has it.
    pub(super) fn dot_all256(x: &QActs, m: &QMatrix, acc: &mut [i32]) -> bool {
        if !available256() {
            return false;
        }
        // SAFETY: as above, for avx2 and avxvnni, both seen just above.
        unsafe { product256(x, m, acc) };
        true
    }

    /// The whole product ([`tiles!`]) in tiles of up to 8 tokens: one register of sums each (32 registers leave room for more, but 8
    /// independent sums already hide `vpdpbusd`'s latency).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn product512(x: &QActs, m: &QMatrix, acc: &mut [i32]) {
        tiles!(m, x.tokens, tile512(x, m, acc), [8, 7, 6, 5, 4, 3, 2]);
    }

    /// Panel `p`'s 16 outputs for tokens `t0..t0 + C`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    fn tile512<const C: usize>(x: &QActs, m: &QMatrix, acc: &mut [i32], p: usize, t0: usize) {
        let groups = m.groups;
        let w = m.panel(p);
        let a = x.tokens_from::<C>(t0);
        assert!(w.len() == groups && a.iter().all(|r| r.len() == groups));
        let mut sums = [_mm512_setzero_si512(); C];
        for g in 0..groups {
            let wv: __m512i = pulp::cast(w[g]);
            for c in 0..C {
                let b = _mm512_set1_epi32(i32::from_le_bytes(a[c][g]));
                sums[c] = _mm512_dpbusd_epi32(sums[c], b, wv);
            }
        }
        m.store(acc, p, t0, sums.map(pulp::cast));
    }

    /// As [`product512`] with 16 registers of 256 bits: a panel's sums take two, so tiles of
    /// up to 6 tokens (12 sums, the panel's two weight registers and a broadcast).
    #[target_feature(enable = "avx2,avxvnni")]
    fn product256(x: &QActs, m: &QMatrix, acc: &mut [i32]) {
        tiles!(m, x.tokens, tile256(x, m, acc), [6, 5, 4, 3, 2]);
    }

    /// Panel `p`'s 16 outputs for tokens `t0..t0 + C`, rows 0–7 and 8–15 in two registers.
    #[target_feature(enable = "avx2,avxvnni")]
    #[inline]
    fn tile256<const C: usize>(x: &QActs, m: &QMatrix, acc: &mut [i32], p: usize, t0: usize) {
        let groups = m.groups;
        let w = m.panel(p);
        let a = x.tokens_from::<C>(t0);
        assert!(w.len() == groups && a.iter().all(|r| r.len() == groups));
        let mut lo = [_mm256_setzero_si256(); C];
        let mut hi = [_mm256_setzero_si256(); C];
        for g in 0..groups {
            let halves: [[i8; PANEL_GROUP / 2]; 2] = pulp::cast(w[g]);
            let (wl, wh): (__m256i, __m256i) = (pulp::cast(halves[0]), pulp::cast(halves[1]));
            for c in 0..C {
                let b = _mm256_set1_epi32(i32::from_le_bytes(a[c][g]));
                lo[c] = _mm256_dpbusd_avx_epi32(lo[c], b, wl);
                hi[c] = _mm256_dpbusd_avx_epi32(hi[c], b, wh);
            }
        }
        m.store::<C>(
            acc,
            p,
            t0,
            std::array::from_fn(|c| pulp::cast([lo[c], hi[c]])),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::numbers;

    #[test]
    fn the_fast_product_equals_the_plain_one_for_every_tile_shape() {
        // Sizes that leave every remainder tile (tokens 1 to 4 past a multiple of 5), a last
        // panel with fewer than 16 rows, and input sizes that are not a multiple of the group.
        for (tokens, rows, cols) in [
            (1, 1, 1),
            (7, 8, 40),
            (3, 3, 32),
            (5, 10, 384),
            (2, 4, 1536),
            (11, 33, 385),
            (9, 16, 6),
            (6, 48, 1536),
            (13, 17, 387),
        ] {
            let x = numbers(tokens as u64, tokens * cols, 4.0);
            let w = numbers(rows as u64 + 99, rows * cols, 0.2);
            let m = QMatrix::new(&w, rows, cols, &vec![0.0; rows]);
            let a = QActs::new(&x, tokens, cols);
            let mut fast = vec![0i32; tokens * rows];
            let mut plain = vec![0i32; tokens * rows];
            dot_all(&a, &m, &mut fast);
            dot_all_plain(&a, &m, &mut plain);
            // The kernel `dot_all` takes is the one detected: the fastest this CPU has.
            #[cfg(target_arch = "x86_64")]
            assert_eq!(
                Kernel::detect() == Kernel::Avx512Vnni,
                vnni::available512(),
                "{:?}",
                Kernel::detect()
            );
            assert_eq!(fast, plain, "{tokens}x{rows}x{cols}");
            // Every kernel the machine has, not only the one `dot_all` took.
            let check = |kernel: &str, run: &dyn Fn(&mut [i32])| {
                let mut got = vec![0i32; tokens * rows];
                run(&mut got);
                assert_eq!(got, plain, "{kernel} {tokens}x{rows}x{cols}");
            };
            #[cfg(target_arch = "x86_64")]
            if vnni::available512() {
                check("AVX512-VNNI", &|acc| assert!(vnni::dot_all512(&a, &m, acc)));
            }
            #[cfg(target_arch = "x86_64")]
            if vnni::available256() {
                check("AVX-VNNI", &|acc| assert!(vnni::dot_all256(&a, &m, acc)));
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = pulp::x86::V4::try_new() {
                check("AVX-512BW", &|acc| {
                    let (x, m) = (&a, &m);
                    simd.vectorize(avx512::Tiles { simd, x, m, acc });
                });
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = pulp::x86::V3::try_new() {
                check("AVX2", &|acc| {
                    let (x, m) = (&a, &m);
                    simd.vectorize(avx2::Tiles { simd, x, m, acc });
                });
            }
        }
    }

    #[test]
    fn reused_buffers_give_the_same_outputs() {
        // A scratch that held a wider layer's bytes and sums (stale values everywhere), then
        // layers narrower, wider and with padding inputs: the same outputs as fresh buffers.
        let mut scratch = Scratch {
            acc: vec![-7; 40_000],
            q: vec![0xA5; 40_000],
        };
        for (tokens, rows, cols) in [(9, 48, 387), (3, 16, 64), (12, 40, 1536), (5, 33, 6)] {
            let x = numbers(tokens as u64 + 3, tokens * cols, 2.0);
            let w = numbers(rows as u64 + 5, rows * cols, 0.2);
            let m = QMatrix::new(&w, rows, cols, &numbers(7, rows, 0.5));
            let mut fresh = vec![0f32; tokens * rows];
            m.forward(&QActs::new(&x, tokens, cols), &mut fresh);
            let mut reused = vec![0f32; tokens * rows];
            scratch.forward(&m, &x, tokens, cols, &mut reused);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&reused), bits(&fresh), "{tokens}x{rows}x{cols}");
        }
    }

    #[test]
    fn extreme_values_do_not_saturate() {
        // Every activation at 255 and every weight at ±63: the largest pair sums there are.
        let cols = 64;
        let x = vec![1.0f32; cols];
        let mut w = vec![1.0f32; cols];
        w.extend(vec![-1.0f32; cols]);
        let m = QMatrix::new(&w, 2, cols, &[0.5, -0.5]);
        let a = QActs::new(&x, 1, cols);
        let mut out = vec![0f32; 2];
        m.forward(&a, &mut out);
        assert!((out[0] - 64.5).abs() < 1e-3, "{out:?}");
        assert!((out[1] + 64.5).abs() < 1e-3, "{out:?}");
    }

    #[test]
    fn the_product_is_close_to_the_f32_one() {
        let (tokens, rows, cols) = (9, 17, 384);
        let x = numbers(1, tokens * cols, 3.0);
        let w = numbers(2, rows * cols, 0.1);
        let bias = numbers(3, rows, 0.5);
        let m = QMatrix::new(&w, rows, cols, &bias);
        let mut out = vec![0f32; tokens * rows];
        m.forward(&QActs::new(&x, tokens, cols), &mut out);
        for t in 0..tokens {
            for n in 0..rows {
                let exact: f32 = (0..cols)
                    .map(|k| x[t * cols + k] * w[n * cols + k])
                    .sum::<f32>()
                    + bias[n];
                // Uniform random data is the hard case for per-row scales; the error is a
                // few percent of the output's typical size (sqrt(cols) * 3 * 0.1 / 3).
                assert!(
                    (out[t * rows + n] - exact).abs() < 0.1,
                    "{t},{n}: {} vs {exact}",
                    out[t * rows + n]
                );
            }
        }
    }

    #[test]
    fn activations_quantize_to_the_bytes_a_plain_cast_gives() {
        // Every value a token's row can hold near the rounding points (halves, integers, the
        // ends of the range) and random ones: the vector-friendly floor equals `as u8`.
        let mut x: Vec<f32> = (0..=2_048).map(|i| i as f32 / 8.0 - 128.0).collect();
        x.extend(numbers(7, 4_096, 50.0));
        x.extend([
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            1e-30,
            -1e-30,
            0.0,
            -0.0,
        ]);
        let cols = x.len();
        let a = QActs::new(&x, 1, cols);
        let (s, z) = (a.scale[0], a.zero[0] as f32);
        let inv = 1.0 / s;
        for (k, v) in x.iter().enumerate() {
            let want = (v * inv + z + 0.5).clamp(0.0, 255.0) as u8;
            assert_eq!(a.q[k], want, "{v}");
        }
    }

    #[test]
    fn a_constant_row_and_an_empty_range_quantize() {
        let a = QActs::new(&[0.0; 8], 1, 8);
        assert!(a.q.iter().all(|&q| q == a.zero[0] as u8));
        let m = QMatrix::new(&[0.0; 8], 1, 8, &[1.0]);
        let mut out = [0f32];
        m.forward(&a, &mut out);
        assert_eq!(out, [1.0]);
    }
}
