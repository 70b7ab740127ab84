//! Set-of-Mark (SoM) marks: where each kept object's numbered label goes and how boxes and
//! labels are drawn into the camera images (`docs/metavqa.md` §3).
//!
//! * [`crate::visibility::anchor`] (the visibility stage's, which places every anchor once): the
//!   label anchor, the visible-mask point farthest from the mask boundary (exact Euclidean distance
//!   transform on the GPU and its CPU twin, a 4-px image border excluded), and the ring anchor
//!   outside the box of small objects; this stage reads the anchors from the visibility table.
//! * [`layout`]: mark numbers and label placement (no overlaps, no covered anchors).
//! * [`draw`]: box outlines and numbered labels drawn into the image (GPU and CPU twin).
//! * [`font`]: the built-in digit bitmaps and the mark palette.
//! * [`stage`]: `drivegen som`, the marked images and `marks.arrow`.
//! * [`config`]: the settings of `configs/som.toml`.

pub mod config;
pub mod draw;
pub mod font;
mod kept;
pub mod layout;
pub mod recipe;
pub mod stage;

pub use config::SomConfig;
pub use stage::{run, Options};
