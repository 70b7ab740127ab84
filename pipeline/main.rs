//! The `drivegen` binary: parse, run, print the error chain once, exit.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod cli_build;
mod cli_corrupt;
mod cli_metavqa;
mod cli_sts;
mod cli_validate;
mod run;
mod run_sources;

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = cli::Cli::parse();
    match run::run(cli) {
        Ok(code) => code,
        Err(err) => {
            let mut msg = format!("drivegen: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(s) = source {
                let text = s.to_string();
                if !msg.contains(&text) {
                    msg.push_str(&format!(": {text}"));
                }
                source = s.source();
            }
            eprintln!("{msg}");
            ExitCode::from(2)
        }
    }
}

/// Rust ignores SIGPIPE, so a write to a closed stdout (`drivegen inspect … | head -1`) fails,
/// and `print!` panics on the failure. Restoring the default action ends the process quietly
/// the way every Unix command-line tool ends there (status 141 in the shell).
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid action
    // for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
