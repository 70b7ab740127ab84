//! drivegen's JPEG encoder: baseline ITU-T T.81, YCbCr with 4:2:0 chroma.
//!
//! Every JPEG drivegen writes goes through it: the synthetic corpus's frames, corrupted images
//! and the report's pictures. The general-purpose encoder of the `image` crate codes
//! full-resolution chroma and reads the picture pixel by pixel through a generic view; this one
//! does what camera JPEGs and the references' writers do (Pillow and OpenCV default to 4:2:0
//! at quality 95), reads the RGB buffer directly, and uses the standard's example quantisation
//! and Huffman tables (Annex K), scaled by quality the usual way (50 = the tables as printed).
//! It is plain scalar Rust with no CPU-feature dispatch, so its bytes are the same on every
//! machine (BENCHMARKS.md, "JPEG and PNG encoders", gives the measured speeds and the choice).

/// Annex K.1: luminance quantisation, natural (row-major) order.
const LUMA_Q: [u16; 64] = [
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113,
    92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
];

/// Annex K.2: chrominance quantisation.
const CHROMA_Q: [u16; 64] = [
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99,
    47, 66, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
    99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99,
];

/// Zig-zag position → natural index.
const ZIGZAG: [usize; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

/// Annex K.3: the typical Huffman tables as (code counts per length 1..16, symbols).
const DC_LUMA_BITS: [u8; 16] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
const DC_CHROMA_BITS: [u8; 16] = [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0];
const DC_VALS: [u8; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const AC_LUMA_BITS: [u8; 16] = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d];
const AC_LUMA_VALS: [u8; 162] = [
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
    0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0,
    0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
    0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
    0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5,
    0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
    0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];
const AC_CHROMA_BITS: [u8; 16] = [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77];
const AC_CHROMA_VALS: [u8; 162] = [
    0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
    0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0,
    0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
    0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
    0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
    0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5,
    0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3,
    0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
    0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8,
    0xf9, 0xfa,
];

/// A Huffman table as code and length per symbol (Annex C: canonical codes by length).
struct Huffman {
    code: [u16; 256],
    len: [u8; 256],
}

impl Huffman {
    fn new(bits: &[u8; 16], vals: &[u8]) -> Self {
        let mut h = Huffman {
            code: [0; 256],
            len: [0; 256],
        };
        let mut code = 0u16;
        let mut k = 0;
        for (i, &n) in bits.iter().enumerate() {
            for _ in 0..n {
                h.code[vals[k] as usize] = code;
                h.len[vals[k] as usize] = i as u8 + 1;
                code += 1;
                k += 1;
            }
            code <<= 1;
        }
        h
    }
}

/// Entropy-coded segment writer with 0xFF byte stuffing.
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    #[inline]
    fn put(&mut self, code: u32, len: u32) {
        self.acc = (self.acc << len) | u64::from(code);
        self.n += len;
        while self.n >= 8 {
            self.n -= 8;
            let b = (self.acc >> self.n) as u8;
            self.out.push(b);
            if b == 0xFF {
                self.out.push(0);
            }
        }
    }

    fn flush(&mut self) {
        if self.n > 0 {
            let pad = 8 - self.n;
            self.put((1 << pad) - 1, pad);
        }
    }
}

/// Magnitude category of a coefficient and its additional bits.
#[inline]
fn category(v: i32) -> (u32, u32) {
    let a = v.unsigned_abs();
    let size = 32 - a.leading_zeros();
    let bits = if v < 0 {
        (v - 1) as u32 & ((1u32 << size) - 1)
    } else {
        v as u32
    };
    (size, bits)
}

/// The DCT basis: `C[u][x] = c(u)/2 · cos((2x+1)uπ/16)`, c(0) = 1/√2, so that a row pass
/// followed by a column pass gives T.81's forward DCT.
fn dct_basis() -> [[f32; 8]; 8] {
    let mut c = [[0f32; 8]; 8];
    for (u, row) in c.iter_mut().enumerate() {
        let cu = if u == 0 {
            std::f64::consts::FRAC_1_SQRT_2
        } else {
            1.0
        };
        for (x, v) in row.iter_mut().enumerate() {
            *v = (cu / 2.0 * ((2 * x + 1) as f64 * u as f64 * std::f64::consts::PI / 16.0).cos())
                as f32;
        }
    }
    c
}

/// An 8-point DCT by even/odd folding (the basis is symmetric for even u and antisymmetric for
/// odd u), half the multiplications of the plain sum.
#[inline]
fn dct8(c: &[[f32; 8]; 8], f: [f32; 8]) -> [f32; 8] {
    let s = [f[0] + f[7], f[1] + f[6], f[2] + f[5], f[3] + f[4]];
    let d = [f[0] - f[7], f[1] - f[6], f[2] - f[5], f[3] - f[4]];
    let mut out = [0f32; 8];
    for u in 0..8 {
        let (v, b) = if u % 2 == 0 { (&s, &c[u]) } else { (&d, &c[u]) };
        out[u] = v[0] * b[0] + v[1] * b[1] + v[2] * b[2] + v[3] * b[3];
    }
    out
}

struct Encoder {
    basis: [[f32; 8]; 8],
    /// Reciprocal quantisers, natural order: [luma, chroma].
    recip: [[f32; 64]; 2],
    dc: [Huffman; 2],
    ac: [Huffman; 2],
    bits: Bits,
}

impl Encoder {
    /// Transforms, quantises and codes one 8×8 block of level-shifted samples.
    fn block(&mut self, px: &[f32; 64], table: usize, prev_dc: &mut i32) {
        let mut tmp = [0f32; 64];
        for y in 0..8 {
            let row: [f32; 8] = px[8 * y..8 * y + 8].try_into().unwrap_or([0.0; 8]);
            let r = dct8(&self.basis, row);
            for u in 0..8 {
                tmp[8 * u + y] = r[u];
            }
        }
        let mut q = [0i32; 64];
        for u in 0..8 {
            let col: [f32; 8] = tmp[8 * u..8 * u + 8].try_into().unwrap_or([0.0; 8]);
            let r = dct8(&self.basis, col);
            for (v, coef) in r.iter().enumerate() {
                let i = 8 * v + u;
                // Round half away from zero with a truncating conversion: `f32::round` is a
                // library call on baseline x86-64, and this runs 64 times per block.
                let x = coef * self.recip[table][i];
                q[i] = if x >= 0.0 {
                    (x + 0.5) as i32
                } else {
                    (x - 0.5) as i32
                };
            }
        }
        let diff = q[0] - *prev_dc;
        *prev_dc = q[0];
        let (size, extra) = category(diff);
        let dc = &self.dc[table];
        self.bits.put(
            u32::from(dc.code[size as usize]),
            u32::from(dc.len[size as usize]),
        );
        if size > 0 {
            self.bits.put(extra, size);
        }
        let mut run = 0u32;
        for &zi in &ZIGZAG[1..] {
            let v = q[zi];
            if v == 0 {
                run += 1;
                continue;
            }
            let ac = &self.ac[table];
            while run > 15 {
                self.bits
                    .put(u32::from(ac.code[0xF0]), u32::from(ac.len[0xF0]));
                run -= 16;
            }
            let (size, extra) = category(v);
            let sym = ((run << 4) | size) as usize;
            self.bits
                .put(u32::from(ac.code[sym]), u32::from(ac.len[sym]));
            self.bits.put(extra, size);
            run = 0;
        }
        if run > 0 {
            let ac = &self.ac[table];
            self.bits.put(u32::from(ac.code[0]), u32::from(ac.len[0]));
        }
    }
}

fn scaled_table(base: &[u16; 64], quality: u8) -> [u8; 64] {
    let q = u32::from(quality.clamp(1, 100));
    let scale = if q < 50 { 5000 / q } else { 200 - 2 * q };
    base.map(|b| ((u32::from(b) * scale + 50) / 100).clamp(1, 255) as u8)
}

fn segment(out: &mut Vec<u8>, marker: u8, body: &[u8]) {
    out.extend_from_slice(&[0xFF, marker]);
    out.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(body);
}

/// The largest width or height a baseline JPEG frame header can state.
pub const MAX_SIDE: u32 = 65535;

/// Encodes row-major RGB8 pixels (`rgb.len() == 3·width·height`, both sides ≥ 1 and < 65536)
/// as a baseline JFIF JPEG with 4:2:0 chroma.
pub fn encode(rgb: &[u8], width: usize, height: usize, quality: u8) -> Vec<u8> {
    let qt = [
        scaled_table(&LUMA_Q, quality),
        scaled_table(&CHROMA_Q, quality),
    ];
    let mut out = Vec::with_capacity(width * height / 4 + 1024);
    out.extend_from_slice(&[0xFF, 0xD8]);
    segment(
        &mut out,
        0xE0,
        &[b'J', b'F', b'I', b'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0],
    );
    let mut dqt = Vec::with_capacity(130);
    for (id, t) in qt.iter().enumerate() {
        dqt.push(id as u8);
        dqt.extend(ZIGZAG.iter().map(|&i| t[i]));
    }
    segment(&mut out, 0xDB, &dqt);
    let (h16, w16) = ((height as u16).to_be_bytes(), (width as u16).to_be_bytes());
    segment(
        &mut out,
        0xC0,
        &[
            8, h16[0], h16[1], w16[0], w16[1], 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1,
        ],
    );
    let mut dht = Vec::new();
    for (class_id, bits, vals) in [
        (0x00u8, &DC_LUMA_BITS, &DC_VALS[..]),
        (0x10, &AC_LUMA_BITS, &AC_LUMA_VALS[..]),
        (0x01, &DC_CHROMA_BITS, &DC_VALS[..]),
        (0x11, &AC_CHROMA_BITS, &AC_CHROMA_VALS[..]),
    ] {
        dht.push(class_id);
        dht.extend_from_slice(bits);
        dht.extend_from_slice(vals);
    }
    segment(&mut out, 0xC4, &dht);
    segment(&mut out, 0xDA, &[3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0]);

    // The DCT output is unscaled, so the quantiser divides by the table entry alone.
    let recip = [
        qt[0].map(|v| 1.0 / f32::from(v)),
        qt[1].map(|v| 1.0 / f32::from(v)),
    ];
    let mut enc = Encoder {
        basis: dct_basis(),
        recip,
        dc: [
            Huffman::new(&DC_LUMA_BITS, &DC_VALS),
            Huffman::new(&DC_CHROMA_BITS, &DC_VALS),
        ],
        ac: [
            Huffman::new(&AC_LUMA_BITS, &AC_LUMA_VALS),
            Huffman::new(&AC_CHROMA_BITS, &AC_CHROMA_VALS),
        ],
        bits: Bits { out, acc: 0, n: 0 },
    };
    let (mut dc_y, mut dc_cb, mut dc_cr) = (0, 0, 0);
    let mut y = [[0f32; 64]; 4];
    let mut cb = [0f32; 64];
    let mut cr = [0f32; 64];
    for my in (0..height).step_by(16) {
        for mx in (0..width).step_by(16) {
            cb.fill(0.0);
            cr.fill(0.0);
            for dy in 0..16 {
                // Edge MCUs repeat the last row and column.
                let py = (my + dy).min(height - 1);
                let row = &rgb[3 * py * width..3 * (py + 1) * width];
                for dx in 0..16 {
                    let px = (mx + dx).min(width - 1);
                    let (r, g, b) = (
                        f32::from(row[3 * px]),
                        f32::from(row[3 * px + 1]),
                        f32::from(row[3 * px + 2]),
                    );
                    let blk = (dy / 8) * 2 + dx / 8;
                    y[blk][8 * (dy % 8) + dx % 8] = 0.299 * r + 0.587 * g + 0.114 * b - 128.0;
                    let ci = 8 * (dy / 2) + dx / 2;
                    cb[ci] += 0.25 * (-0.168_736 * r - 0.331_264 * g + 0.5 * b);
                    cr[ci] += 0.25 * (0.5 * r - 0.418_688 * g - 0.081_312 * b);
                }
            }
            for blk in &y {
                enc.block(blk, 0, &mut dc_y);
            }
            enc.block(&cb, 1, &mut dc_cb);
            enc.block(&cr, 1, &mut dc_cr);
        }
    }
    enc.bits.flush();
    let mut out = enc.bits.out;
    out.extend_from_slice(&[0xFF, 0xD9]);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn psnr(a: &[u8], b: &[u8]) -> f64 {
        let mse = a
            .iter()
            .zip(b)
            .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
            .sum::<f64>()
            / a.len() as f64;
        10.0 * (255.0f64 * 255.0 / mse.max(1e-12)).log10()
    }

    #[test]
    fn ac_tables_hold_every_symbol_once() {
        for vals in [&AC_LUMA_VALS, &AC_CHROMA_VALS] {
            let mut seen = [false; 256];
            for &v in vals.iter() {
                assert!(!seen[v as usize]);
                seen[v as usize] = true;
            }
            assert!(seen[0x00] && seen[0xF0]);
            for run in 0..16 {
                for size in 1..=10 {
                    assert!(seen[(run << 4) | size]);
                }
            }
        }
        assert_eq!(
            AC_LUMA_BITS.iter().map(|&b| usize::from(b)).sum::<usize>(),
            162
        );
        assert_eq!(
            AC_CHROMA_BITS
                .iter()
                .map(|&b| usize::from(b))
                .sum::<usize>(),
            162
        );
    }

    #[test]
    fn decodes_back_to_the_picture() {
        // Smooth gradients, flat areas and hard edges, at a size that is not a multiple of 16.
        let (w, h) = (101, 67);
        let mut rgb = vec![0u8; w * h * 3];
        for yy in 0..h {
            for xx in 0..w {
                let i = 3 * (yy * w + xx);
                let inside = (30..70).contains(&xx) && (20..50).contains(&yy);
                rgb[i] = if inside { 200 } else { (xx * 2) as u8 };
                rgb[i + 1] = if inside { 40 } else { (yy * 3) as u8 };
                rgb[i + 2] = if inside { 60 } else { 128 };
            }
        }
        let jpeg = encode(&rgb, w, h, 95);
        let img = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg)
            .unwrap()
            .to_rgb8();
        assert_eq!((img.width() as usize, img.height() as usize), (w, h));
        let p = psnr(&rgb, img.as_raw());
        assert!(p > 30.0, "PSNR {p:.1} dB");
        // A flat interior pixel comes back nearly exact.
        let c = img.get_pixel(50, 35).0;
        assert!(
            c.iter()
                .zip([200u8, 40, 60])
                .all(|(a, b)| (i32::from(*a) - i32::from(b)).abs() <= 4),
            "{c:?}"
        );
        // Lower quality, smaller file.
        assert!(encode(&rgb, w, h, 50).len() < jpeg.len());
    }

    #[test]
    fn categories() {
        assert_eq!(category(0), (0, 0));
        assert_eq!(category(1), (1, 1));
        assert_eq!(category(-1), (1, 0));
        assert_eq!(category(-3), (2, 0));
        assert_eq!(category(5), (3, 5));
        assert_eq!(category(-5), (3, 2));
        assert_eq!(category(-1023), (10, 0));
    }
}
