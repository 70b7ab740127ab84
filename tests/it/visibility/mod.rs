//! The visibility stage: projection, z-buffer and filters by hand, against an exact ray-cast
//! reference, with Waymo's lens model, and end to end on the synthetic corpus.

mod visibility_corpus;
mod visibility_distortion;
mod visibility_exact;
mod visibility_units;
