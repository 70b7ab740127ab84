//! Set-of-Mark: the exact distance transform and its argmax (GPU kernels `som_edt_cols`,
//! `som_edt_rows`, `som_anchor` against their CPU twins and against a brute-force EDT written
//! here from the definition), and hand-computed anchors (`anchors`); label layout and drawing,
//! GPU against CPU and read back as text (`draw`); `drivegen som` on a tiny corpus (`cli`); the
//! anchors placed once, under the Set-of-Mark config's rules, and read by som and MetaVQA
//! (`anchor_rules`).
//!
//! GPU tests need an adapter (lavapipe is enough); `DRIVEGEN_GPU_TESTS=no` skips them. Random
//! inputs are seeded from the clock; `DRIVEGEN_TEST_SEED` replays a printed seed.

use crate::common;

use std::collections::HashMap;

use common::gpu::gpu;
use common::random::{seed, Rng};
use drivegen::config::StageConfig;
use drivegen::som::config::DrawConfig;
use drivegen::som::draw::{draw_cpu, draw_gpu, pack, DrawMark, BLACK};
use drivegen::som::font::{mark_colour, DIGITS};
use drivegen::som::layout::{label_size, layout, MarkIn};
use drivegen::som::SomConfig;
use drivegen::visibility::anchor::{
    argmax_cpu, choose_anchor, edt_cpu, edt_gpu, interior_anchors_cpu, interior_anchors_gpu,
    ring_anchor, Anchor, AnchorRule, EdtParams,
};
use drivegen::visibility::raster::EMPTY;

mod anchor_rules;
mod anchors;
mod cli;
mod draw;
