//! The corrupt stage's work in order of its output, some of it still on the GPU.
//!
//! Each (frame, corruption, severity) is a unit whose rows, questions and images are recorded
//! in the order the stage meets them. On the GPU, units go into batches of at least
//! [`BATCH`] views, one submission each; a batch is read back only once the next one is
//! submitted, so the device is never idle while the stage plans, packs and records, and the
//! stage waits once per batch rather than once per view.

use std::collections::VecDeque;

use image::RgbImage;
use rayon::prelude::*;
use serde_json::Value;

use super::gpu::{GpuRunner, Ticket, BATCH};
use super::{apply_cpu, Corruption, View, ViewPlan};
use crate::gpu::Gpu;
use crate::{Error, Result};

/// Submitted batches not yet read back, at most: one runs while the other is collected.
const IN_FLIGHT: usize = 2;

/// A unit's views: the image (None when the stage writes none), whether the corruption
/// changed it, and its recorded parameters.
pub(super) type Done = Vec<(Option<RgbImage>, bool, Value)>;

/// One (frame, corruption, severity) of the stage.
pub(super) struct Unit {
    /// The frame's index in the stage's frame list.
    pub frame: usize,
    pub corruption: Corruption,
    pub severity: u8,
    state: State,
}

enum State {
    Ready(Done),
    /// Its views' images are the next ones the GPU gives back; here their `applied` and
    /// parameters.
    OnGpu(Vec<(bool, Value)>),
}

/// Units in order, with the GPU batches that hold their images.
pub(super) struct InFlight<'g> {
    runner: Option<GpuRunner<'g>>,
    units: VecDeque<Unit>,
    tickets: VecDeque<Ticket>,
    /// Images read back and not yet given to their unit, in order.
    back: VecDeque<RgbImage>,
}

impl<'g> InFlight<'g> {
    /// On `gpu`, or on the CPU twins when None.
    pub fn new(gpu: Option<&'g Gpu>) -> InFlight<'g> {
        InFlight {
            runner: gpu.map(GpuRunner::new),
            units: VecDeque::new(),
            tickets: VecDeque::new(),
            back: VecDeque::new(),
        }
    }

    /// Queues a unit whose images are known.
    pub fn push_done(&mut self, frame: usize, corruption: Corruption, severity: u8, done: Done) {
        self.units.push_back(Unit {
            frame,
            corruption,
            severity,
            state: State::Ready(done),
        });
    }

    /// Queues a unit to corrupt: `plans` of `views`, on the GPU when there is one (submitting
    /// the open batch once it holds [`BATCH`] views), else on the CPU twins now.
    pub fn push_planned(
        &mut self,
        frame: usize,
        corruption: Corruption,
        severity: u8,
        views: &[View<'_>],
        plans: Vec<ViewPlan>,
    ) -> Result<()> {
        let Some(runner) = &mut self.runner else {
            let done = views
                .par_iter()
                .zip(&plans)
                .map(|(v, p)| apply_cpu(v.image, &p.plan))
                .collect::<Vec<_>>()
                .into_iter()
                .zip(plans)
                .map(|(img, p)| (Some(img), p.applied, p.params))
                .collect();
            self.push_done(frame, corruption, severity, done);
            return Ok(());
        };
        let jobs: Vec<_> = views
            .iter()
            .zip(&plans)
            .map(|(v, p)| (v.image, &p.plan))
            .collect();
        runner.push_all(&jobs)?;
        if runner.open_len() >= BATCH {
            self.tickets.push_back(runner.submit()?);
        }
        self.units.push_back(Unit {
            frame,
            corruption,
            severity,
            state: State::OnGpu(plans.into_iter().map(|p| (p.applied, p.params)).collect()),
        });
        Ok(())
    }

    /// The units at the front whose images are all here, in order, with their images. Waits
    /// for the device only to keep at most [`IN_FLIGHT`] batches out; with `all`, submits the
    /// open batch and waits for everything.
    pub fn take_done(&mut self, all: bool) -> Result<Vec<(Unit, Done)>> {
        if all {
            if let Some(runner) = &mut self.runner {
                if runner.open_len() > 0 {
                    self.tickets.push_back(runner.submit()?);
                }
            }
        }
        let keep = if all { 0 } else { IN_FLIGHT - 1 };
        while self.tickets.len() > keep {
            let (Some(runner), Some(t)) = (&mut self.runner, self.tickets.pop_front()) else {
                break;
            };
            self.back.extend(runner.wait(t)?);
        }
        let mut out = Vec::new();
        while let Some(unit) = self.units.front() {
            let need = match &unit.state {
                State::Ready(_) => 0,
                State::OnGpu(p) => p.len(),
            };
            if self.back.len() < need {
                break;
            }
            let Some(mut unit) = self.units.pop_front() else {
                break;
            };
            let done = match std::mem::replace(&mut unit.state, State::Ready(Vec::new())) {
                State::Ready(done) => done,
                State::OnGpu(plans) => plans
                    .into_iter()
                    .zip(self.back.drain(..need))
                    .map(|((applied, params), img)| (Some(img), applied, params))
                    .collect(),
            };
            out.push((unit, done));
        }
        if all && !self.units.is_empty() {
            return Err(Error::Internal(
                "corrupt: a unit's images never came back from the GPU".into(),
            ));
        }
        Ok(out)
    }
}
