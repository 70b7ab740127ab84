// Snow 4/4: whiten, add the layer and its 180° rotation. Twin: corrupt::weather::snow_composite.

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> layer: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

fn channel(v: f32, white: f32, add: f32) -> u32 {
    let w = params.blend * v + (1.0 - params.blend) * max(v, white);
    return to_u8(clamp(w + add, 0.0, 1.0));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let x = i % params.width;
    let y = i / params.width;
    let rot = (params.height - 1u - y) * params.width + (params.width - 1u - x);
    let c = unpack_rgb(src[i]);
    let r = f32(c.x) / 255.0;
    let g = f32(c.y) / 255.0;
    let b = f32(c.z) / 255.0;
    let gray = params.gray_r * r + params.gray_g * g + params.gray_b * b;
    let white = gray * params.whiten_scale + params.whiten_offset;
    let add = f32(layer[i]) / 255.0 + f32(layer[rot]) / 255.0;
    dst[i] = pack_rgb(vec3<u32>(channel(r, white, add), channel(g, white, add), channel(b, white, add)));
}
