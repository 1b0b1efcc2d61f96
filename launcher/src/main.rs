//! The `mclaunch` binary: see the library docs and `mclaunch --help`.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser;
use mclaunch::{note, Cli, LaunchError};

fn main() -> ExitCode {
    mcast::logging::init();
    // `mclaunch --proxy`: started on a remote host by the launch agent; its
    // job comes on stdin, never on the command line.
    if std::env::args_os().nth(1).is_some_and(|a| a == "--proxy") {
        return ExitCode::from(mclaunch::proxy::serve());
    }
    let cli = Cli::parse();
    match launch(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            note(&format!("{e:#}"));
            let code = e
                .chain()
                .find_map(|c| c.downcast_ref::<LaunchError>())
                .map_or(1, LaunchError::exit_code);
            ExitCode::from(code)
        }
    }
}

/// Run the job; returns mclaunch's exit code.
fn launch(cli: Cli) -> anyhow::Result<u8> {
    let spec = cli.into_spec()?;
    let outcome = mclaunch::run(&spec)
        .with_context(|| format!("cannot launch {}", spec.program.to_string_lossy()))?;
    if let Some(msg) = outcome.message() {
        note(&msg);
    }
    Ok(outcome.exit_code())
}
