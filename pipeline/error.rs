//! The one error type of the library.
//!
//! Every variant carries what a user needs to find the problem: the file, the record (token,
//! row, line) and what was wrong with it. The binary prints the chain once; nothing below
//! `main.rs` uses `anyhow`.

use std::path::PathBuf;

/// Everything that can go wrong in drivegen.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or folder could not be read or written.
    #[error("{}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A JSON document could not be parsed (the position is 1-based, as editors show it).
    #[error("{}:{line}:{column}: malformed JSON", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
    /// A configuration file is unreadable or holds an invalid value.
    #[error("config {}: {detail}", file.display())]
    Config { file: PathBuf, detail: String },
    /// A table does not have the schema drivegen expects.
    #[error("table {table}: {detail}")]
    Schema { table: String, detail: String },
    /// A record of the input data is invalid; `record` names it (token, row or index).
    #[error("{}: record {record}: {detail}", file.display())]
    Input {
        file: PathBuf,
        record: String,
        detail: String,
    },
    /// An argument, option or parameter (from the command line, a config or a caller) has a
    /// value drivegen cannot use; `name` says which, `why` what is wrong and what would do.
    #[error("{name}: {why}")]
    Invalid { name: String, why: String },
    /// Something a command was pointed at does not hold what it was asked for: a scene in a
    /// store, a split in a release, images in a folder.
    #[error("{}: no {what}", place.display())]
    NotFound { place: PathBuf, what: String },
    /// drivegen broke one of its own invariants (a worker thread panicked, an image it drew has
    /// the wrong size): a bug to report, never the user's input.
    #[error("internal error: {0} (a bug in drivegen)")]
    Internal(String),
    /// drivegen refuses to write, replace or remove `path`: it is not drivegen's, not what it
    /// should be, or in use; `why` says which and what to do.
    #[error("{} {why}", path.display())]
    Refused { path: PathBuf, why: String },
    /// A build's release breaks a promise its config makes (a family under its `min_rows`, a
    /// family over its blind margin); `detail` says which, why, and what would do.
    #[error("{}: {detail}", path.display())]
    Promise { path: PathBuf, detail: String },
    /// A GPU kernel failed to build or run.
    #[error("gpu kernel {kernel}: {detail}")]
    Gpu { kernel: String, detail: String },
    /// No wgpu adapter could be opened.
    #[error("no GPU adapter available: {0}")]
    NoAdapter(String),
    /// An external tool (ffmpeg, …) is missing or failed.
    #[error("{tool}: {detail}")]
    Tool { tool: String, detail: String },
    /// A step of `drivegen build` failed; `source` is the step's own error.
    #[error("build step {stage}")]
    Stage {
        stage: String,
        #[source]
        source: Box<Error>,
    },
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// An invalid input record.
    pub fn input(
        file: impl Into<PathBuf>,
        record: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Error::Input {
            file: file.into(),
            record: record.into(),
            detail: detail.into(),
        }
    }

    /// An invalid argument, option or parameter.
    pub fn invalid(name: impl Into<String>, why: impl Into<String>) -> Self {
        Error::Invalid {
            name: name.into(),
            why: why.into(),
        }
    }

    /// `place` does not hold `what`.
    pub(crate) fn not_found(place: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Error::NotFound {
            place: place.into(),
            what: what.into(),
        }
    }

    /// The error with every cause below it on one line, the way `main` prints it. Display
    /// shows one level only, so anything that stores or logs an error's text uses this.
    pub fn report(&self) -> Report<'_> {
        Report(self)
    }

    /// A JSON parse error, keeping serde's line and column.
    pub fn json(path: impl Into<PathBuf>, source: serde_json::Error) -> Self {
        Error::Json {
            path: path.into(),
            line: source.line(),
            column: source.column(),
            source,
        }
    }
}

/// An error and its causes joined by ": ", outermost first (see [`Error::report`]).
pub struct Report<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = self.0.source();
        while let Some(c) = cause {
            write!(f, ": {c}")?;
            cause = c.source();
        }
        Ok(())
    }
}
