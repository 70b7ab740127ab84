// Dark: tone curve + Poisson shot noise (Knuth, split into pieces) + Gaussian read noise.
// The per-value thresholds come from the host table. Twin: corrupt::photometric::dark_value.

struct Params {
    k0: u32,
    k1: u32,
    inv_lambda: f32,
    sigma: f32,
}

struct Entry {
    threshold: f32,
    pieces: u32,
}

const DARK_POISSON: u32 = 0x0100u;
const DARK_GAUSS: u32 = 0x0010u;
const DARK_MAX_DRAWS: u32 = 1024u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> table: array<Entry>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

fn dark_value(x: u32, counter: u32) -> u32 {
    let e = table[x];
    var count = 0u;
    var j = 0u;
    for (var piece = 0u; piece < e.pieces; piece++) {
        var p = 1.0;
        loop {
            if j >= DARK_MAX_DRAWS {
                break;
            }
            p *= rng_unit(params.k0, params.k1, DARK_POISSON + j, counter);
            j += 1u;
            if p <= e.threshold {
                break;
            }
            count += 1u;
        }
    }
    let v = clamp(f32(count) * params.inv_lambda, 0.0, 1.0);
    let n = v + params.sigma * rng_normal(params.k0, params.k1, DARK_GAUSS, counter);
    return to_u8(n);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg);
    if i >= arrayLength(&dst) {
        return;
    }
    let c = unpack_rgb(src[i]);
    dst[i] = pack_rgb(vec3<u32>(
        dark_value(c.x, i * 3u),
        dark_value(c.y, i * 3u + 1u),
        dark_value(c.z, i * 3u + 2u),
    ));
}
