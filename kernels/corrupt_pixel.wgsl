// Per-pixel corruptions: HSV adjustment (Brightness, Saturate), bit masking (Color
// Quantization), all black (Camera Crash, Frame Lost). Twin: corrupt::photometric::pixel_op.

struct Params {
    v_add: f32,
    s_scale: f32,
    s_offset: f32,
    mode: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn rgb_to_hsv(r: f32, g: f32, b: f32) -> vec3<f32> {
    let v = max(max(r, g), b);
    let delta = v - min(min(r, g), b);
    var s = 0.0;
    if delta != 0.0 {
        s = delta / v;
    }
    var h = 0.0;
    if delta != 0.0 {
        if r == v {
            h = (g - b) / delta;
        }
        if g == v {
            h = 2.0 + (b - r) / delta;
        }
        if b == v {
            h = 4.0 + (r - g) / delta;
        }
        h /= 6.0;
        h -= floor(h);
    }
    return vec3<f32>(h, s, v);
}

fn hsv_to_rgb(h: f32, s: f32, v: f32) -> vec3<f32> {
    let h6 = h * 6.0;
    let fl = floor(h6);
    let f = h6 - fl;
    var i = i32(fl) % 6;
    if i < 0 {
        i += 6;
    }
    let p = v * (1.0 - s);
    let q = v * (1.0 - f * s);
    let t = v * (1.0 - (1.0 - f) * s);
    switch i {
        case 0: { return vec3<f32>(v, t, p); }
        case 1: { return vec3<f32>(q, v, p); }
        case 2: { return vec3<f32>(p, v, t); }
        case 3: { return vec3<f32>(p, q, v); }
        case 4: { return vec3<f32>(t, p, v); }
        default: { return vec3<f32>(v, p, q); }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let c = unpack_rgb(src[i]);
    if params.mode == 0u {
        let hsv = rgb_to_hsv(f32(c.x) / 255.0, f32(c.y) / 255.0, f32(c.z) / 255.0);
        let s = clamp(hsv.y * params.s_scale + params.s_offset, 0.0, 1.0);
        let v = clamp(hsv.z + params.v_add, 0.0, 1.0);
        let rgb = hsv_to_rgb(hsv.x, s, v);
        dst[i] = pack_rgb(vec3<u32>(to_u8(rgb.x), to_u8(rgb.y), to_u8(rgb.z)));
    } else if params.mode == 100u {
        dst[i] = 0u;
    } else {
        let bits = min(params.mode - 1u, 8u);
        let mask = (0xff00u >> bits) & 0xffu;
        dst[i] = pack_rgb(c & vec3<u32>(mask));
    }
}
