// Fog: (x + a·F)·M/(M + a) with F the min-max normalised map. Twin: corrupt::weather::fog_value.

struct Params {
    width: u32,
    size: u32,
    n: u32,
    strength: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> map: array<f32>;
@group(0) @binding(2) var<storage, read> stats: array<u32>;
@group(0) @binding(3) var<storage, read> src: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let fmin = f32_unorder(~stats[0]);
    let fmax = f32_unorder(stats[1]);
    let m = f32(stats[2]) / 255.0;
    let a = params.strength;
    let x = i % params.width;
    let y = i / params.width;
    let f = map[y * params.size + x];
    let fnorm = (f - fmin) / (fmax - fmin);
    let c = unpack_rgb(src[i]);
    let t = vec3<f32>(f32(c.x) / 255.0, f32(c.y) / 255.0, f32(c.z) / 255.0) + vec3<f32>(a * fnorm);
    let o = t * m / (m + a);
    dst[i] = pack_rgb(vec3<u32>(to_u8(o.x), to_u8(o.y), to_u8(o.z)));
}
