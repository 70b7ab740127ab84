// Set-of-Mark drawing: box outlines, then labels (black background, digits in the mark's
// colour), into an RGBA8 image packed one pixel per u32 (r in the low byte). The CPU twin is
// `draw_cpu` in pipeline/som/draw.rs. One invocation per pixel walks the entries of its
// 16 × 16 tile (built by the host: the outlines, value n, then the labels, value N + n, of the
// marks touching the tile, ascending), so the last one drawn at a pixel wins, exactly as the
// twin's painting order, without visiting every mark at every pixel.

struct Params {
    width: u32,
    height: u32,
    num_marks: u32,
    thickness: u32,
    glyph_scale: u32,
    padding: u32,
    tiles_x: u32,
    pad1: u32,
}

// `DrawMark` of draw.rs, field for field.
struct Mark {
    bx0: u32,
    by0: u32,
    bx1: u32,
    by1: u32,
    lx0: u32,
    ly0: u32,
    lx1: u32,
    ly1: u32,
    colour: u32,
    number: u32,
    num_digits: u32,
    pad: u32,
}

const GLYPH_W: u32 = 7u;
const GLYPH_H: u32 = 11u;
const GLYPH_GAP: u32 = 1u;
const BLACK: u32 = 0xff000000u;
const TILE: u32 = 16u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> marks: array<Mark>;
// font[d * 11 + r]: row r of digit d, bit 6 the leftmost column.
@group(0) @binding(2) var<storage, read> font: array<u32>;
@group(0) @binding(3) var<storage, read> tile_offsets: array<u32>;
@group(0) @binding(4) var<storage, read> tile_entries: array<u32>;
@group(0) @binding(5) var<storage, read_write> image: array<u32>;

fn in_outline(m: Mark, i: u32, j: u32) -> bool {
    if (i < m.bx0 || i >= m.bx1 || j < m.by0 || j >= m.by1) {
        return false;
    }
    let t = params.thickness;
    return i < m.bx0 + t || i + t >= m.bx1 || j < m.by0 + t || j + t >= m.by1;
}

// The label pixel (i, j) of m, which lies in its rectangle: the colour or black.
fn label_pixel(m: Mark, i: u32, j: u32) -> u32 {
    let s = params.glyph_scale;
    let ox = m.lx0 + params.padding;
    let oy = m.ly0 + params.padding;
    if (i < ox || j < oy) {
        return BLACK;
    }
    let gx = i - ox;
    let gy = j - oy;
    let advance = (GLYPH_W + GLYPH_GAP) * s;
    let t = gx / advance;
    if (t >= m.num_digits || gy >= GLYPH_H * s) {
        return BLACK;
    }
    let cx = (gx % advance) / s;
    if (cx >= GLYPH_W) {
        return BLACK;
    }
    var p = 1u;
    for (var k = t + 1u; k < m.num_digits; k++) {
        p *= 10u;
    }
    let d = (m.number / p) % 10u;
    let row = font[d * GLYPH_H + gy / s];
    if (((row >> (GLYPH_W - 1u - cx)) & 1u) == 1u) {
        return m.colour;
    }
    return BLACK;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if (k >= params.width * params.height) {
        return;
    }
    let i = k % params.width;
    let j = k / params.width;
    var c = image[k];
    let tile = (j / TILE) * params.tiles_x + i / TILE;
    let n_marks = params.num_marks;
    for (var e = tile_offsets[tile]; e < tile_offsets[tile + 1u]; e++) {
        let v = tile_entries[e];
        if (v < n_marks) {
            if (in_outline(marks[v], i, j)) {
                c = marks[v].colour;
            }
        } else {
            let m = marks[v - n_marks];
            if (i >= m.lx0 && i < m.lx1 && j >= m.ly0 && j < m.ly1) {
                c = label_pixel(m, i, j);
            }
        }
    }
    image[k] = c;
}
