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
