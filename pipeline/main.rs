//! The `drivegen` binary. The command line lives in the library (`drivegen::cli`), so the
//! compiler sees every caller of every crate-private item and reports the ones nobody calls.

fn main() -> std::process::ExitCode {
    drivegen::cli::main()
}
