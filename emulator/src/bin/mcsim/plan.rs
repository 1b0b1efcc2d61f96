//! `mcsim plan`: one checked multicast plan as JSON.

use std::io::Write;
use std::process::ExitCode;

use mcast_emulator::plan::{self as planner, McsimError, PlanRequest};

use crate::cli::*;
use crate::fail;

pub(crate) fn run_plan(args: &PlanArgs) -> ExitCode {
    let req = PlanRequest {
        fabric: &args.fabric,
        algo: &args.algo,
        source: &args.source,
        dests: &args.dests,
        packets: args.packets,
        port_model: args.port_model.into(),
    };
    let plan = match planner::plan(&req) {
        Ok(p) => p,
        Err(e @ McsimError::Input(_)) => return fail(&format!("error: {e}"), 2),
        Err(e @ McsimError::Internal(_)) => return fail(&format!("error: {e}"), 1),
    };
    let json = if args.compact {
        serde_json::to_string(&plan)
    } else {
        serde_json::to_string_pretty(&plan)
    };
    let json = match json {
        Ok(j) => j,
        Err(e) => return fail(&format!("error: cannot serialise the plan: {e}"), 1),
    };
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{json}").and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (e.g. `| head`) is not worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => fail(&format!("error: cannot write the plan: {e}"), 1),
    }
}
