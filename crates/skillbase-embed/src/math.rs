//! The arithmetic of the forward pass: matrix products, layer norm, softmax, GELU.
//!
//! The element-wise functions are written branch-free so that the compiler vectorises them
//! (`f32::exp` is a libm call per element and would cost more than the matrix products at
//! long sequences); their accuracy is a few ulp, far below the model's own precision.

use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};

/// A row-major or transposed matrix in a slice: element (i, j) is at `i * rs + j * cs`.
#[derive(Clone, Copy)]
pub(crate) struct Mat<'a> {
    pub data: &'a [f32],
    pub rows: usize,
    pub cols: usize,
    pub rs: usize,
    pub cs: usize,
}

impl<'a> Mat<'a> {
    /// A row-major `rows x cols` matrix whose rows are `stride` apart.
    pub fn rows(data: &'a [f32], rows: usize, cols: usize, stride: usize) -> Mat<'a> {
        Mat {
            data,
            rows,
            cols,
            rs: stride,
            cs: 1,
        }
    }

    /// The transpose.
    pub fn t(self) -> Mat<'a> {
        Mat {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }

    fn view(&self) -> ArrayView2<'a, f32> {
        let len = if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.rs + (self.cols - 1) * self.cs + 1
        };
        ArrayView2::from_shape(
            (self.rows, self.cols).strides((self.rs, self.cs)),
            &self.data[..len],
        )
        .expect("matrix view within its slice")
    }
}

/// `c = alpha * a · b + beta * c`, where `c` is row-major `a.rows x b.cols` with rows `ldc` apart.
pub(crate) fn gemm(alpha: f32, a: Mat<'_>, b: Mat<'_>, beta: f32, c: &mut [f32], ldc: usize) {
    debug_assert_eq!(a.cols, b.rows);
    let (m, n) = (a.rows, b.cols);
    if m == 0 || n == 0 {
        return;
    }
    let len = (m - 1) * ldc + n;
    let mut cv = ArrayViewMut2::from_shape((m, n).strides((ldc, 1)), &mut c[..len])
        .expect("output view within its slice");
    ndarray::linalg::general_mat_mul(alpha, &a.view(), &b.view(), beta, &mut cv);
}

/// Fills each `width`-wide row of `out` with `bias` (the product then adds onto it).
#[inline(always)]
pub(crate) fn fill_rows(out: &mut [f32], bias: &[f32]) {
    for row in out.chunks_exact_mut(bias.len()) {
        row.copy_from_slice(bias);
    }
}

/// Sum of `v` in eight interleaved partial sums (so that the loop vectorises; the order of
/// additions differs from a left-to-right sum by a rounding or two).
#[inline(always)]
pub(crate) fn sum8(v: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (chunks, rest) = v.as_chunks::<8>();
    for c in chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// Layer norm over each row of `x`, in place: `(x - mean) / sqrt(var + eps) * g + b`.
#[inline(always)]
pub(crate) fn layer_norm(x: &mut [f32], g: &[f32], b: &[f32], eps: f32) {
    let width = g.len();
    let mut centred = vec![0f32; width];
    for row in x.chunks_exact_mut(width) {
        let mean = sum8(row) / width as f32;
        for (c, v) in centred.iter_mut().zip(row.iter()) {
            *c = (v - mean) * (v - mean);
        }
        let var = sum8(&centred) / width as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(g).zip(b) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// The largest of `v` (`-inf` for none; NaNs are passed over), in 32 lanes so that the scan
/// vectorises (`f32::max` folded one by one was a tenth of the element-wise work of a forward
/// pass, in the softmax). A maximum does not depend on the order it is taken in.
#[inline(always)]
pub(crate) fn max32(v: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 32];
    let (chunks, rest) = v.as_chunks::<32>();
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = if x > *a { x } else { *a };
        }
    }
    rest.iter()
        .fold(tree(acc, |a, b| if b > a { b } else { a }), |m, &x| {
            if x > m { x } else { m }
        })
}

/// `v`'s lanes combined by `f` in halves (N a power of two): vector operations where a fold
/// from the first lane to the last is `N` scalar steps, as long as the scan before it for the
/// short rows of attention. `f` must not depend on the order (a minimum, a maximum).
#[inline(always)]
pub(crate) fn tree<const N: usize>(mut v: [f32; N], f: impl Fn(f32, f32) -> f32) -> f32 {
    const { assert!(N.is_power_of_two()) };
    let mut w = N / 2;
    while w > 0 {
        for i in 0..w {
            v[i] = f(v[i], v[i + w]);
        }
        w /= 2;
    }
    v[0]
}

/// Softmax of one row, in place.
#[inline(always)]
pub(crate) fn softmax(row: &mut [f32]) {
    let max = max32(row);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / sum8(row);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// Exact GELU (with erf, as BERT's `gelu`), in place.
#[inline(always)]
pub(crate) fn gelu(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// `e^x` for f32, branch-free (Cephes' `expf`: range reduction by ln 2, degree-5 polynomial).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Rounds to nearest without a libm call: adding 1.5 * 2^23 drops the fraction.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let r2 = r * r;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 5e-1;
    let y = p * r2 + r + 1.0;
    // n is an integer in -126..=127, held in the low mantissa bits of `shifted` (1.5 * 2^23 + n):
    // reading it from there instead of `n as i32` keeps the loop free of the saturating
    // conversion, which would stop the vectoriser.
    let ni = (shifted.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let scale = f32::from_bits(((ni + 127) as u32) << 23);
    y * scale
}

/// The error function for f32, branch-free (the rational approximation of Eigen and XLA,
/// exact to a few ulp; |x| >= 4 gives ±1 in f32).
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_6e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329e-3;
    q = x2 * q + -1.426_474e-2;
    p / q
}

/// Deterministic values in `-scale..scale` for tests (SplitMix64, no dependency).
#[cfg(test)]
pub(crate) fn numbers(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        // Values of erf from a 50-digit computation.
        let known = [
            (0.0, 0.0),
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (1.5, 0.966_105_146_475_310_7),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
            (5.0, 1.0),
        ];
        for (x, e) in known {
            assert!((erf(x as f32) as f64 - e).abs() < 5e-7, "erf({x})");
            assert!((erf(-x as f32) as f64 + e).abs() < 5e-7, "erf(-{x})");
        }
    }

    #[test]
    fn max32_is_the_maximum() {
        assert_eq!(max32(&[]), f32::NEG_INFINITY);
        for n in [1, 5, 31, 32, 33, 64, 100, 128, 129] {
            let v: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.25)
                .collect();
            let want = v.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
            assert_eq!(max32(&v), want, "{n}");
            // The maximum anywhere: first, last, in the remainder.
            for at in [0, n - 1, n / 2] {
                let mut w = v.clone();
                w[at] = 1e9;
                assert_eq!(max32(&w), 1e9, "{n} at {at}");
            }
        }
        assert_eq!(max32(&[f32::NAN, 2.0, f32::NAN]), 2.0);
        assert_eq!(max32(&[-3.0; 40]), -3.0);
        // Halving finds the extreme lane wherever it is.
        for at in 0..8 {
            let mut v = [1.0f32; 8];
            v[at] = -5.0;
            assert_eq!(tree(v, f32::min), -5.0, "{at}");
            v[at] = 9.0;
            assert_eq!(tree(v, f32::max), 9.0, "{at}");
        }
        assert_eq!(tree([4.0], f32::min), 4.0);
    }

    #[test]
    fn exp_matches_std() {
        let mut worst = 0f32;
        for i in -8000..=800 {
            let x = i as f32 * 0.01;
            let rel = ((exp(x) - x.exp()) / x.exp()).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 4e-7, "worst relative error {worst}");
        assert_eq!(exp(-1e30), exp(-87.0));
        assert!(exp(f32::NEG_INFINITY) < 1e-37);
    }

    #[test]
    fn gemm_with_strides() {
        // a = [[1,2],[3,4]], b stored as [n,k] = [[1,0],[1,1],[0,2]] used transposed.
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [1.0, 0.0, 1.0, 1.0, 0.0, 2.0];
        let mut c = [1.0; 6];
        gemm(
            1.0,
            Mat::rows(&a, 2, 2, 2),
            Mat::rows(&b, 3, 2, 2).t(),
            1.0,
            &mut c,
            3,
        );
        assert_eq!(c, [2.0, 4.0, 5.0, 4.0, 8.0, 9.0]);
    }
}
