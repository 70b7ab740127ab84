// Rain 1/4: one invocation per drop rasterises its streak (8-connected Bresenham) into the
// mask; overlapping drops write the same value, so no atomics are needed.
// Twin: corrupt::weather::rain_drop.

const RAIN_X: u32 = 0x0501u;
const RAIN_Y: u32 = 0x0502u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> mask: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let d = flat_index(gid, nwg);
    if d >= params.drops {
        return;
    }
    let x0 = params.x_lo + i32(rng_u32(params.k0, params.k1, RAIN_X, d) % params.x_span);
    let y0 = i32(rng_u32(params.k0, params.k1, RAIN_Y, d) % params.y_span);
    let x1 = x0 + params.slant;
    let y1 = y0 + i32(params.length);
    let dx = abs(x1 - x0);
    let dy = -abs(y1 - y0);
    var sx = -1;
    if x0 < x1 {
        sx = 1;
    }
    var sy = -1;
    if y0 < y1 {
        sy = 1;
    }
    var x = x0;
    var y = y0;
    var err = dx + dy;
    for (var k = 0; k <= dx - dy; k++) {
        if x >= 0 && y >= 0 && u32(x) < params.width && u32(y) < params.height {
            mask[u32(y) * params.width + u32(x)] = params.drop_value;
        }
        if x == x1 && y == y1 {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            x += sx;
        }
        if e2 <= dx {
            err += dx;
            y += sy;
        }
    }
}
