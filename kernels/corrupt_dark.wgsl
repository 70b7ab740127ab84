// Dark: tone curve + Poisson shot noise (inversion of a host table) + Gaussian read noise.
// Per input value the host tables the Poisson draw's cumulative distribution in units of
// 2^-24; one 24-bit uniform takes the first count whose entry is above it. Twin:
// corrupt::photometric::dark_value.

struct Params {
    k0: u32,
    k1: u32,
    inv_lambda: f32,
    sigma: f32,
}

struct Entry {
    offset: u32,
    len: u32,
    first: u32,
    pad: u32,
}

const DARK_POISSON: u32 = 0x0100u;
const DARK_GAUSS: u32 = 0x0010u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> table: array<Entry>;
@group(0) @binding(2) var<storage, read> cdf: array<u32>;
@group(0) @binding(3) var<storage, read> src: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

fn dark_value(x: u32, counter: u32) -> u32 {
    let e = table[x];
    let r = rng_u32(params.k0, params.k1, DARK_POISSON, counter) >> 8u;
    // The last entry is 2^24, above every r: the answer lies in [0, len - 1].
    var lo = 0u;
    var hi = e.len - 1u;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if cdf[e.offset + mid] <= r {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    let count = e.first + lo;
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
