//! The one logger: `log` records go to standard error as `drivegen: …` lines, filtered by
//! `-v` (info) and `-vv` (debug; `-vvv` trace). Results a user asked for go to standard output
//! through `print!` in the commands, never through here, so diagnostics never mix into them.

use std::io::Write;

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr {
    level: LevelFilter,
}

impl Log for Stderr {
    fn enabled(&self, metadata: &Metadata) -> bool {
        // Other crates (wgpu, naga) speak one level quieter: their warnings about a driver are
        // noise in a normal run and useful with -v.
        if metadata.target().starts_with("drivegen") {
            metadata.level() <= self.level
        } else {
            metadata.level() < self.level
        }
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let tag = match record.level() {
            Level::Error => "error: ",
            Level::Warn | Level::Info => "",
            Level::Debug => "debug: ",
            Level::Trace => "trace: ",
        };
        // Only drivegen's own records name no crate; wgpu's and naga's say where they came from.
        let origin = if record.target().starts_with("drivegen") {
            String::new()
        } else {
            format!("[{}] ", record.target())
        };
        // A failed write to stderr has nowhere to be reported.
        let _ = writeln!(
            std::io::stderr().lock(),
            "drivegen: {tag}{origin}{}",
            record.args()
        );
    }

    fn flush(&self) {}
}

/// The level `-v` given `verbose` times asks for: warnings by default.
pub(crate) fn level(verbose: u8) -> LevelFilter {
    match verbose {
        0 => LevelFilter::Warn,
        1 => LevelFilter::Info,
        2 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    }
}

/// Installs the logger; called once, first thing after parsing.
pub(crate) fn install(verbose: u8) {
    let level = level(verbose);
    // Leaked once: the logger lives as long as the process. Installing only fails when a
    // logger exists already, which nothing else here makes.
    let logger: &'static Stderr = Box::leak(Box::new(Stderr { level }));
    if log::set_logger(logger).is_ok() {
        log::set_max_level(level);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_crates_are_one_level_quieter() {
        let log = Stderr { level: level(0) };
        let ours = Metadata::builder()
            .level(Level::Warn)
            .target("drivegen::gpu")
            .build();
        let theirs = Metadata::builder()
            .level(Level::Warn)
            .target("wgpu_hal")
            .build();
        let their_error = Metadata::builder()
            .level(Level::Error)
            .target("wgpu_hal")
            .build();
        assert!(log.enabled(&ours));
        assert!(!log.enabled(&theirs));
        assert!(log.enabled(&their_error));
        let verbose = Stderr { level: level(1) };
        assert!(verbose.enabled(&theirs));
    }
}
