//! `mcsim model`: the papers' analytic models.

use std::process::ExitCode;

use mcast_emulator::plan::McsimError;

use crate::cli::*;
use crate::{fail, print_json};

pub(crate) fn run_sci(args: &SciArgs) -> ExitCode {
    use mcast_algorithms::path::sci_model::{MdForm, SciParams, TimeUnit, UTorusForm};
    use mcast_emulator::model_sci;
    let parsed = (|| -> Result<model_sci::SciRequest, McsimError> {
        let mut params = SciParams {
            k: args.k,
            n: args.n,
            bytes: args.bytes,
            mu_r: args.r,
            l_p_ns: args.lp_ns,
            l_f_ns: args.lf_ns,
            l_s_ns: args.ls_ns,
            md_form: match args.md_form {
                MdFormArg::Rings => MdForm::Rings,
                MdFormArg::RingsPlusChain => MdForm::RingsPlusChain,
            },
            utorus_form: match args.utorus_form {
                UTorusFormArg::Fraction => UTorusForm::Fraction,
                UTorusFormArg::Ceiling => UTorusForm::Ceiling,
            },
            t_process_unit: match args.t_process_unit {
                UnitArg::Us => TimeUnit::Us,
                UnitArg::Ns => TimeUnit::Ns,
            },
            ..SciParams::testbed()
        };
        if let Some(t) = &args.t_process {
            params.t_process = model_sci::parse_t_process(t)?;
        }
        Ok(model_sci::SciRequest {
            params,
            groups: model_sci::parse_groups(&args.group)?,
            algorithms: model_sci::parse_algorithms(&args.algo)?,
        })
    })();
    let result = parsed.and_then(|req| model_sci::evaluate(&req));
    match result {
        Ok(j) => print_json(&j, args.compact),
        Err(e @ McsimError::Input(_)) => fail(&format!("error: {e}"), 2),
        Err(e @ McsimError::Internal(_)) => fail(&format!("error: {e}"), 1),
    }
}

pub(crate) fn run_min_model(args: &MinModelArgs) -> ExitCode {
    use mcast_algorithms::min::{throughput, CopyCase};
    let case = match args.case {
        CaseArg::A => CopyCase::RandomStart,
        CaseArg::B => CopyCase::Early,
    };
    match throughput(args.n, args.f, args.m, args.load, case) {
        Ok(t) => {
            let mut v = match serde_json::to_value(&t) {
                Ok(v) => v,
                Err(e) => return fail(&format!("error: cannot serialise the output: {e}"), 1),
            };
            if let Some(o) = v.as_object_mut() {
                o.insert("model".to_string(), serde_json::Value::from("min"));
            }
            print_json(&v, args.compact)
        }
        Err(e) => fail(&format!("error: {e}"), 2),
    }
}
