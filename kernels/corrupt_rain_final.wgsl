// Rain 4/4: contrast k around the per-channel means. Twin: corrupt::weather::rain_final.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> blend: array<u32>;
@group(0) @binding(2) var<storage, read> sums: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

fn channel(i: u32, c: u32) -> u32 {
    let n = params.width * params.height;
    let s = f32(sums[2u * c + 1u]) * 4294967296.0 + f32(sums[2u * c]);
    let mu = s / (f32(n) * 65025.0);
    let v = f32(blend[i * 3u + c]) / 65025.0;
    return to_u8(clamp((v - mu) * params.contrast + mu, 0.0, 1.0));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    dst[i] = pack_rgb(vec3<u32>(channel(i, 0u), channel(i, 1u), channel(i, 2u)));
}
