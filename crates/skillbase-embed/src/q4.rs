//! The `Q4_0` block format of the e5 model file (ggml's): blocks of 32 values, each an f16
//! scale and 32 four-bit values. A leaf module: the file reader (`e5`) and the model's word
//! table (`model`) both expand blocks with it.

/// Values per `Q4_0` block.
pub(crate) const QK: usize = 32;
/// Bytes per `Q4_0` block: an f16 scale, then 16 bytes of two 4-bit values each.
pub(crate) const Q4_BLOCK_BYTES: usize = 18;

/// `(nibble - 8) * scale` for each value of the `Q4_0` blocks in `blocks` (`out.len() / 32`
/// blocks of 18 bytes).
pub(crate) fn dequantize_q4(blocks: &[u8], out: &mut [f32]) {
    for (b, o) in blocks
        .chunks_exact(Q4_BLOCK_BYTES)
        .zip(out.chunks_exact_mut(QK))
    {
        let d = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
        for j in 0..16 {
            let q = b[2 + j];
            o[j] = (f32::from(q & 0x0F) - 8.0) * d;
            o[j + 16] = (f32::from(q >> 4) - 8.0) * d;
        }
    }
}

/// IEEE half precision to single (subnormals, infinities and NaN included).
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise the mantissa.
            let shift = m.leading_zeros() - 21;
            let m = (m << shift) & 0x3FF;
            sign | ((127 - 15 + 1 - shift) << 23) | (m << 13)
        }
        (31, m) => sign | 0x7F80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_converts_exactly() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24)); // smallest subnormal
        assert_eq!(f16_to_f32(0x03FF), 1023.0 * 2f32.powi(-24)); // largest subnormal
        assert_eq!(f16_to_f32(0x7BFF), 65504.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert!(f16_to_f32(0x8000).is_sign_negative());
        assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
        assert!(f16_to_f32(0x7E00).is_nan());
    }

    #[test]
    fn q4_blocks_expand_low_nibbles_first() {
        let mut block = vec![0x00, 0x3C]; // scale 1.0
        block.extend((0..16u8).map(|j| (15 - j) << 4 | j));
        let mut out = vec![0f32; 32];
        dequantize_q4(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], j as f32 - 8.0);
            assert_eq!(out[j + 16], (15 - j) as f32 - 8.0);
        }
    }
}
