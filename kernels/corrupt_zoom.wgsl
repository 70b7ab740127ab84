// Zoom Blur: mean of the image and its centred zooms (scipy's corner-aligned bilinear).
// Twin: corrupt::blur::zoom_cpu. params.extra = 1 / (layers + 1).

struct Params {
    width: u32,
    height: u32,
    n: u32,
    extra: f32,
}

struct Layer {
    top: u32,
    left: u32,
    crop_h: u32,
    crop_w: u32,
    ratio_y: f32,
    ratio_x: f32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> layers: array<Layer>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

fn pixel_at(x: u32, y: u32) -> vec3<f32> {
    let c = unpack_rgb(src[y * params.width + x]);
    return vec3<f32>(f32(c.x) / 255.0, f32(c.y) / 255.0, f32(c.z) / 255.0);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let x = i % params.width;
    let y = i / params.width;
    var acc = vec3<f32>(0.0);
    for (var k = 0u; k < params.n; k++) {
        let l = layers[k];
        let sy = f32(y) * l.ratio_y;
        let sx = f32(x) * l.ratio_x;
        let y0 = min(u32(floor(sy)), l.crop_h - 1u);
        let x0 = min(u32(floor(sx)), l.crop_w - 1u);
        let fy = sy - f32(y0);
        let fx = sx - f32(x0);
        let y1 = min(y0 + 1u, l.crop_h - 1u);
        let x1 = min(x0 + 1u, l.crop_w - 1u);
        let a = pixel_at(l.left + x0, l.top + y0);
        let b = pixel_at(l.left + x1, l.top + y0);
        let c = pixel_at(l.left + x0, l.top + y1);
        let d = pixel_at(l.left + x1, l.top + y1);
        let t = a + (b - a) * fx;
        let u = c + (d - c) * fx;
        acc += t + (u - t) * fy;
    }
    let o = (pixel_at(x, y) + acc) * params.extra;
    dst[i] = pack_rgb(vec3<u32>(to_u8(o.x), to_u8(o.y), to_u8(o.z)));
}
