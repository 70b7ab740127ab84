// Projects points given in the global frame into one pinhole camera.
//
// CPU twin: pipeline/cpu/project_points.rs. The twin repeats every expression below in the
// same order, so keep the two in step: the dot products are written out term by term
// (instead of `m * p`) precisely so that their evaluation order is fixed and visible.
//
// Layout contract with the host (drivegen::gpu): binding 0 is the uniform block, binding 1
// the input array, binding 2 the output array; one invocation per output element.

struct Params {
    // Global -> camera, column-major (the devkit chain global -> ego -> sensor).
    global_to_camera: mat4x4<f32>,
    fx: f32,
    fy: f32,
    cx: f32,
    cy: f32,
    width: u32,
    height: u32,
    near: f32,
    pad: u32,
}

struct Projected {
    u: f32,
    v: f32,
    depth: f32,
    flags: u32,
}

const IN_FRONT: u32 = 1u;
const IN_IMAGE: u32 = 2u;

@group(0) @binding(0) var<uniform> params: Params;
// xyz in the global frame; w is padding (vec4 keeps the 16-byte stride explicit).
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> projected: array<Projected>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    // The last workgroup overhangs the array when n is not a multiple of 64.
    if i >= arrayLength(&projected) {
        return;
    }
    let p = points[i];
    let m = params.global_to_camera;
    let x = m[0].x * p.x + m[1].x * p.y + m[2].x * p.z + m[3].x;
    let y = m[0].y * p.x + m[1].y * p.y + m[2].y * p.z + m[3].y;
    let z = m[0].z * p.x + m[1].z * p.y + m[2].z * p.z + m[3].z;

    // Behind the near plane: u = v = 0 rather than a NaN/inf, so both sides agree bit for bit.
    var r = Projected(0.0, 0.0, z, 0u);
    if z > params.near {
        r.u = params.fx * (x / z) + params.cx;
        r.v = params.fy * (y / z) + params.cy;
        r.flags = IN_FRONT;
        if r.u >= 0.0 && r.u < f32(params.width) && r.v >= 0.0 && r.v < f32(params.height) {
            r.flags = r.flags | IN_IMAGE;
        }
    }
    projected[i] = r;
}
