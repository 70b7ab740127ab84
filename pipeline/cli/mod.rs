//! The `drivegen` command line: parse, run, print the error chain once, exit. The binary
//! (`pipeline/main.rs`) only calls [`main`]; the commands live here, in the library, so that
//! everything they reach is crate-private unless a test or a benchmark needs it.

use std::process::ExitCode;

use clap::Parser;

mod args;
mod commands;
mod logger;

/// Runs the command line: the whole of the `drivegen` binary.
pub fn main() -> ExitCode {
    keep_freed_memory();
    restore_sigpipe();
    clean_up_on_signals();
    let cli = commands::Cli::parse();
    logger::install(cli.verbose);
    match cli.run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!(
                "drivegen: {}",
                crate::progress::printable(&err.report().to_string())
            );
            ExitCode::from(2)
        }
    }
}

/// Every stage allocates and frees several image-sized buffers per image (a 1600×900 frame is
/// 4 to 6 MB per plane). glibc serves blocks that large with a fresh `mmap` and unmaps them on
/// free, so each image paid for zeroing and faulting in its pages again: a quarter of the
/// visibility and Set-of-Mark steps' time went to the kernel. Serving them from the heap and
/// keeping freed memory there lets the next image reuse the same pages; peak memory is what
/// the largest images in flight need, as before.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any thread exists.
    unsafe {
        // The largest value glibc accepts (half of a thread arena's 64 MiB heap).
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
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

/// SIGINT and SIGTERM are taken by one thread, which removes the temporary files and
/// half-written stores in flight and exits with the conventional status (128 + signal). The
/// signals are blocked before any other thread exists, so every thread inherits the mask and
/// only this one receives them; child processes start with the default mask again (std resets
/// it on spawn).
fn clean_up_on_signals() {
    #[cfg(unix)]
    // SAFETY: the set is initialised by sigemptyset before use; pthread_sigmask and sigwait get
    // valid pointers; called first in main, before any thread is spawned.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                if libc::sigwait(&set, &mut sig) == 0 {
                    let n = crate::store::cleanup::remove_all();
                    let name = if sig == libc::SIGINT {
                        "SIGINT"
                    } else {
                        "SIGTERM"
                    };
                    eprintln!(
                        "drivegen: stopped by {name}; removed {n} temporary file(s) in flight"
                    );
                    std::process::exit(128 + sig);
                }
            });
        if spawned.is_err() {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
