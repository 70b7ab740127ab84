//! The built-in digit font and the mark colours.
//!
//! Each digit is a 7 × 11 bitmap drawn for this project with two-pixel strokes, so that the
//! digits stay distinct and readable at glyph scale 2 on 1600 × 900 images without a font
//! dependency. Row `r` of a glyph is a 7-bit mask, bit 6 the leftmost column.

/// Glyph width and height in font pixels (before scaling).
pub(crate) const GLYPH_W: u32 = 7;
pub(crate) const GLYPH_H: u32 = 11;
/// Font pixels between two glyphs.
pub(crate) const GLYPH_GAP: u32 = 1;

const ART: [[&str; 11]; 10] = [
    [
        ".#####.", "##...##", "##...##", "##..###", "##.#.##", "##.#.##", "##.#.##", "###..##",
        "##...##", "##...##", ".#####.",
    ],
    [
        "...##..", "..###..", ".####..", "...##..", "...##..", "...##..", "...##..", "...##..",
        "...##..", "...##..", ".######",
    ],
    [
        ".#####.", "##...##", ".....##", ".....##", "....##.", "...##..", "..##...", ".##....",
        "##.....", "##.....", "#######",
    ],
    [
        ".#####.", "##...##", ".....##", ".....##", "..####.", ".....##", ".....##", ".....##",
        ".....##", "##...##", ".#####.",
    ],
    [
        "....##.", "...###.", "..####.", ".##.##.", "##..##.", "##..##.", "#######", "....##.",
        "....##.", "....##.", "....##.",
    ],
    [
        "#######", "##.....", "##.....", "##.....", "######.", ".....##", ".....##", ".....##",
        ".....##", "##...##", ".#####.",
    ],
    [
        ".#####.", "##...##", "##.....", "##.....", "######.", "##...##", "##...##", "##...##",
        "##...##", "##...##", ".#####.",
    ],
    [
        "#######", ".....##", ".....##", "....##.", "....##.", "...##..", "...##..", "..##...",
        "..##...", "..##...", "..##...",
    ],
    [
        ".#####.", "##...##", "##...##", "##...##", ".#####.", "##...##", "##...##", "##...##",
        "##...##", "##...##", ".#####.",
    ],
    [
        ".#####.", "##...##", "##...##", "##...##", "##...##", ".######", ".....##", ".....##",
        ".....##", "##...##", ".#####.",
    ],
];

const fn row_bits(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut v = 0;
    let mut k = 0;
    while k < b.len() {
        v = (v << 1) | (b[k] == b'#') as u32;
        k += 1;
    }
    v
}

const fn build() -> [[u32; 11]; 10] {
    let mut out = [[0u32; 11]; 10];
    let mut d = 0;
    while d < 10 {
        let mut r = 0;
        while r < 11 {
            out[d][r] = row_bits(ART[d][r]);
            r += 1;
        }
        d += 1;
    }
    out
}

/// `DIGITS[d][r]`: row `r` of digit `d`.
pub const DIGITS: [[u32; 11]; 10] = build();

/// Whether font pixel `(cx, cy)` of digit `d` is set.
#[inline]
pub(crate) fn glyph_bit(d: u32, cx: u32, cy: u32) -> bool {
    (DIGITS[d as usize % 10][cy as usize] >> (GLYPH_W - 1 - cx)) & 1 == 1
}

/// The decimal digits of `n`, most significant first.
pub(crate) fn digits(n: u32) -> Vec<u32> {
    n.to_string().bytes().map(|b| u32::from(b - b'0')).collect()
}

/// Mark colours (`0xRRGGBB`): bright, distinct hues that read on the black label background;
/// no black and no white (MetaVQA reserves white for the grounding target's box).
pub(crate) const PALETTE: [u32; 12] = [
    0xff4040, 0xffa020, 0xffff40, 0x80ff40, 0x40ffa0, 0x40e0ff, 0x6080ff, 0xc060ff, 0xff60c8,
    0xa0ffff, 0xffc896, 0xc8ff96,
];

/// The colour of mark `mark` (1-based).
pub fn mark_colour(mark: u32) -> u32 {
    PALETTE[(mark.max(1) - 1) as usize % PALETTE.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glyphs_are_distinct_and_fill_their_box() {
        for (a, rows) in DIGITS.iter().enumerate() {
            assert!(rows.iter().all(|r| *r < 1 << GLYPH_W));
            for (b, other) in DIGITS[..a].iter().enumerate() {
                assert_ne!(rows, other, "{a} and {b}");
            }
        }
        assert_eq!(digits(0), vec![0]);
        assert_eq!(digits(407), vec![4, 0, 7]);
        assert_eq!(mark_colour(1), PALETTE[0]);
        assert_eq!(mark_colour(13), PALETTE[0]);
    }
}
