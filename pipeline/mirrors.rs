//! The `#[repr(C)]` structs that mirror WGSL structs, checked against the layout naga computes
//! for the kernel sources. A mismatch still compiles, and unless it changes the size it passes
//! wgpu's validation too: the kernel just reads the wrong bytes, so only these tests catch it.

use std::path::{Path, PathBuf};
use wgpu::naga;

use crate::corrupt::blur::{Tap, ZoomLayer};
use crate::corrupt::gpu::{Dims, DimsMode};
use crate::corrupt::occlusion::{Disc, SplashParams};
use crate::corrupt::photometric::{DarkEntry, DarkParams, HsvParams};
use crate::corrupt::weather::{FogLevel, RainParams, SnowParams};
use crate::cpu::project_points::{ProjectParams, Projected};
use crate::som::draw::{DrawMark, DrawParams};
use crate::visibility::anchor::EdtParams;
use crate::visibility::gpu::{ImageInfo, Params as ZbufferParams};
use crate::visibility::raster::TriSetup;

/// `#[repr(C)]` structs of the library that no kernel reads, as (`module::Name` without the
/// crate, why). Everything else found by [`every_repr_c_struct_is_checked`] needs an entry
/// in [`table`].
const NOT_MIRRORS: &[(&str, &str)] = &[(
    "visibility::raster::Tri",
    "the CPU rasteriser's input; the GPU gets the TriSetup made from it",
)];

/// One Rust field (or array element) and the WGSL member it stands for.
#[derive(Debug, Clone)]
struct Field {
    rust: &'static str,
    wgsl: &'static str,
    offset: usize,
}

/// One Rust struct as one kernel's WGSL struct.
#[derive(Debug, Clone)]
struct Mirror {
    rust: &'static str,
    size: usize,
    kernel: &'static str,
    wgsl: &'static str,
    fields: Vec<Field>,
}

/// The WGSL member name: the Rust field's own unless renamed with `=>`.
macro_rules! wgsl_member {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident $member:ident) => {
        stringify!($member)
    };
}

/// The byte offset of `field`, or of element `i` of array `field`.
macro_rules! field_offset {
    ($ty:ty, $field:ident) => {
        ::std::mem::offset_of!($ty, $field)
    };
    ($ty:ty, $field:ident, $i:literal) => {
        element_offset(
            ::std::mem::offset_of!($ty, $field),
            &<$ty as ::bytemuck::Zeroable>::zeroed().$field,
            $i,
        )
    };
}

/// The offset of element `index` of an array field at `base`: `offset_of!` stops at fields.
fn element_offset<E, const N: usize>(base: usize, _array: &[E; N], index: usize) -> usize {
    assert!(index < N, "element {index} of a {N}-element array");
    base + index * std::mem::size_of::<E>()
}

/// `Type => ["kernel", ...] WgslStruct { field, field => member, array[i] => member, ... };`
///
/// Fields are listed in WGSL member order, one per member; an array field that WGSL spells
/// as separate scalars is listed once per element.
macro_rules! mirrors {
    ($(
        $ty:ty => [$($kernel:literal),+ $(,)?] $wgsl:ident {
            $($field:ident $([$i:literal])? $(=> $member:ident)?),+ $(,)?
        };
    )+) => {{
        let mut all: Vec<Mirror> = Vec::new();
        $({
            let fields = vec![$(Field {
                rust: concat!(stringify!($field) $(, "[", stringify!($i), "]")?),
                wgsl: wgsl_member!($field $($member)?),
                offset: field_offset!($ty, $field $(, $i)?),
            }),+];
            for kernel in [$($kernel),+] {
                all.push(Mirror {
                    rust: ::std::any::type_name::<$ty>(),
                    size: ::std::mem::size_of::<$ty>(),
                    kernel,
                    wgsl: stringify!($wgsl),
                    fields: fields.clone(),
                });
            }
        })+
        all
    }};
}

fn table() -> Vec<Mirror> {
    mirrors! {
        EdtParams => ["som_edt_cols", "som_edt_rows", "som_anchor"] Params {
            width, height, border, num_objects, pass => mode,
            _pad[0] => pad0, _pad[1] => pad1, _pad[2] => pad2,
        };
        DrawParams => ["som_draw"] Params {
            width, height, num_marks, thickness, glyph_scale, padding, tiles_x, _pad => pad1,
        };
        DrawMark => ["som_draw"] Mark {
            bbox[0] => bx0, bbox[1] => by0, bbox[2] => bx1, bbox[3] => by1,
            label[0] => lx0, label[1] => ly0, label[2] => lx1, label[3] => ly1,
            colour, number, num_digits, _pad => pad,
        };
        Dims => ["corrupt_motion", "corrupt_zoom"] Params { width, height, n, extra };
        Dims => ["corrupt_fog_composite"] Params {
            width, height => size, n, extra => strength,
        };
        DimsMode => ["corrupt_gauss_h", "corrupt_gauss_v"] Params { width, height, n, mode };
        Tap => ["corrupt_motion", "corrupt_snow_layer"] Tap { dx, dy, w, _pad => pad };
        ZoomLayer => ["corrupt_zoom"] Layer {
            top, left, crop_h, crop_w, ratio_y, ratio_x, _pad[0] => pad0, _pad[1] => pad1,
        };
        ZoomLayer => [
            "corrupt_snow_noise", "corrupt_snow_zoom", "corrupt_snow_layer",
            "corrupt_snow_composite",
        ] Zoom {
            top, left, crop_h, crop_w, ratio_y, ratio_x, _pad[0] => pad0, _pad[1] => pad1,
        };
        Disc => ["corrupt_splash"] Disc { cx, cy, r, _pad => pad };
        SplashParams => ["corrupt_splash"] Params { width, height, n_discs, alpha };
        HsvParams => ["corrupt_pixel"] Params { v_add, s_scale, s_offset, mode };
        DarkParams => ["corrupt_dark"] Params { k0, k1, inv_lambda, sigma };
        DarkEntry => ["corrupt_dark"] Entry { offset, len, first, _pad => pad };
        SnowParams => [
            "corrupt_snow_noise", "corrupt_snow_zoom", "corrupt_snow_layer",
            "corrupt_snow_composite",
        ] Params {
            k0, k1, width, height, zoom_w, zoom_h, n_taps, mean, std => std_dev, threshold,
            blend, whiten_scale, whiten_offset, gray_r, gray_g, gray_b, zoom,
        };
        FogLevel => ["corrupt_fog_level"] Params {
            k0, k1, size, step, wibble, phase, _pad[0] => pad0, _pad[1] => pad1,
        };
        RainParams => [
            "corrupt_rain_drops", "corrupt_rain_streak", "corrupt_rain_blend",
            "corrupt_rain_final",
        ] Params {
            k0, k1, width, height, drops, length, slant, drop_value, x_lo, x_span, y_span,
            contrast,
        };
        TriSetup => ["zbuffer"] TriSetup {
            x, y, i0, j0, i1, j1, w0, wi_hi, wi_lo, wj_hi, wj_lo, obj, top_left, _pad => pad,
        };
        ProjectParams => ["project_points"] Params {
            global_to_camera, fx, fy, cx, cy, width, height, near, _pad => pad,
        };
        Projected => ["project_points"] Projected { u, v, depth, flags };
        ZbufferParams => ["zbuffer"] Params { mode, groups_x, count, num_images };
        ImageInfo => ["zbuffer"] Image { offset, width, height, sub_bits };
    }
}

/// `(member name, offset)` of each member of WGSL struct `name` in `module`, and its span.
fn wgsl_struct(module: &naga::Module, name: &str) -> Option<(Vec<(String, u32)>, u32)> {
    module.types.iter().find_map(|(_, ty)| match &ty.inner {
        naga::TypeInner::Struct { members, span } if ty.name.as_deref() == Some(name) => {
            let members = members
                .iter()
                .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
                .collect();
            Some((members, *span))
        }
        _ => None,
    })
}

#[test]
fn mirrors_match_the_wgsl_layout() {
    let mut failures = Vec::new();
    for m in table() {
        let what = format!("{} as {}'s `{}`", m.rust, m.kernel, m.wgsl);
        let Some(source) =
            crate::gpu::KernelId::from_name(m.kernel).map(crate::gpu::KernelId::source)
        else {
            failures.push(format!("{what}: no kernel `{}` in KERNELS", m.kernel));
            continue;
        };
        let module = match naga::front::wgsl::parse_str(source) {
            Ok(module) => module,
            Err(e) => {
                failures.push(format!("{what}: {}", e.emit_to_string(source)));
                continue;
            }
        };
        let Some((members, span)) = wgsl_struct(&module, m.wgsl) else {
            failures.push(format!("{what}: the kernel has no struct `{}`", m.wgsl));
            continue;
        };
        if m.size != span as usize {
            failures.push(format!(
                "{what}: size_of is {} bytes, the WGSL span {span}",
                m.size
            ));
        }
        if m.fields.len() != members.len() {
            let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
            failures.push(format!(
                "{what}: {} fields listed, WGSL has {} members {names:?}",
                m.fields.len(),
                members.len()
            ));
        }
        for f in &m.fields {
            match members.iter().find(|(n, _)| n == f.wgsl) {
                None => failures.push(format!("{what}: no member `{}` (for `{}`)", f.wgsl, f.rust)),
                Some((_, offset)) if *offset as usize != f.offset => failures.push(format!(
                    "{what}: `{}` is at byte {}, member `{}` at {offset}",
                    f.rust, f.offset, f.wgsl
                )),
                Some(_) => {}
            }
        }
    }
    assert!(
        failures.is_empty(),
        "layout mismatches:\n{}",
        failures.join("\n")
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The module path (without the crate) of library file `rel`, relative to `pipeline/`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts.join("::")
}

/// The names of the structs marked `#[repr(C)]` in `source`.
fn repr_c_structs(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if !(t.starts_with("#[repr(C)]") || t.starts_with("#[repr(C,")) {
            continue;
        }
        // The item is the first later line naming an item keyword; derives and doc comments
        // may come between, over several lines.
        for line in lines.by_ref().take(30) {
            let t = line.trim_start();
            if t.starts_with("//") || t.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = t.split_whitespace().collect();
            if let Some(k) = words.iter().position(|w| *w == "struct") {
                if let Some(name) = words.get(k + 1) {
                    let name: String = name
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    names.push(name);
                }
                break;
            }
            if words.iter().any(|w| *w == "enum" || *w == "union") {
                break;
            }
        }
    }
    names
}

/// Whether `type_name` (from [`std::any::type_name`]) is struct `name` of file module
/// `module`: that module's own, or one of an inline module inside it (`mod tests { .. }`).
fn is_struct(type_name: &str, module: &str, name: &str) -> bool {
    type_name == format!("{module}::{name}")
        || (type_name.starts_with(&format!("{module}::"))
            && type_name.ends_with(&format!("::{name}")))
}

/// A `#[repr(C)]` struct exists only to be read as bytes by something outside Rust; here that
/// is a kernel, so each one must either be in [`table`] or say in [`NOT_MIRRORS`] why not.
#[test]
fn every_repr_c_struct_is_checked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let krate = module_path!().split("::").next().unwrap_or_default();
    // (module with the crate, struct name, `module::Name` without the crate, file)
    let mut found: Vec<(String, String, String, PathBuf)> = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap_or(&file).to_path_buf();
        // `cli/` is the binary (`[[bin]]` in Cargo.toml), not part of this library.
        if rel.starts_with("cli") {
            continue;
        }
        let source =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let module = module_of(&rel);
        for name in repr_c_structs(&source) {
            let (full_module, path) = if module.is_empty() {
                (krate.to_string(), name.clone())
            } else {
                (format!("{krate}::{module}"), format!("{module}::{name}"))
            };
            found.push((full_module, name, path, rel.clone()));
        }
    }
    assert!(
        !found.is_empty(),
        "no #[repr(C)] struct found under {}",
        root.display()
    );

    let table = table();
    let mut failures = Vec::new();
    for (module, name, path, rel) in &found {
        let listed = table.iter().any(|m| is_struct(m.rust, module, name));
        let allowed = NOT_MIRRORS.iter().any(|(p, _)| p == path);
        if listed && allowed {
            failures.push(format!("{path} is both in `table` and in NOT_MIRRORS"));
        } else if !listed && !allowed {
            failures.push(format!(
                "{path} ({}) is #[repr(C)] but has no layout check: add it to `table`, or, if \
                 no kernel reads it, to NOT_MIRRORS with the reason",
                rel.display()
            ));
        }
    }
    // The other direction: a listed type without #[repr(C)] has no defined layout, and one
    // the scan misses means the scan is broken.
    for m in &table {
        if !found
            .iter()
            .any(|(module, name, _, _)| is_struct(m.rust, module, name))
        {
            failures.push(format!(
                "{} is in `table` but the scan found no #[repr(C)] struct of that name",
                m.rust
            ));
        }
    }
    for (path, _) in NOT_MIRRORS {
        if !found.iter().any(|(_, _, p, _)| p == path) {
            failures.push(format!(
                "NOT_MIRRORS lists {path}, which is no #[repr(C)] struct"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
