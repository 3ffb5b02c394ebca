//! `utilgate harness reference`: the built-in `reference` workload as a harness process. A
//! suite with `workload = "reference"` runs it through the ordinary harness protocol (fresh
//! process per repeat, timeout, GPU sampling), so its steps are judged exactly like a user's.
//! Does I/O: the protocol's environment, the GPU, one output file.

#![expect(
    clippy::disallowed_methods,
    reason = "the reference harness writes its results file"
)]

use std::io::Write as _;

use super::protocol_env::ProtocolInputs;
use crate::catalog::Precision;
use crate::cli::ReferenceArgs;
use crate::error::Error;
use crate::measure::cuda::CudaDevice;
use crate::measure::reference::ReferencePlan;

/// The command `run` renders for a `workload = "reference"` suite: this binary as the harness.
/// Its variables are shell-quoted by the template; the config path, a literal, is quoted here.
#[must_use]
pub fn reference_command(config_path: &str, graphs: bool) -> String {
    let quoted = crate::measure::profiler::quote(config_path);
    format!(
        "{{{{ utilgate }}}} harness reference --config {quoted} --kv-dtype {{{{ kv_dtype }}}}{}",
        if graphs { " --graphs" } else { "" }
    )
}

pub fn reference_harness(args: &ReferenceArgs) -> Result<(), Error> {
    let loaded = crate::config::load(&args.config)?;
    let inputs = ProtocolInputs::from_env("reference")?;
    let precision = Precision::parse(&inputs.precision, args.kv_dtype.as_deref())?;
    let model = inputs.model_spec(&loaded)?;
    let (model_name, phase, batch, context) =
        (&inputs.model, inputs.phase, inputs.batch, inputs.context);
    let (warmup, steps, out_path) = (inputs.warmup, inputs.steps, inputs.out.clone());
    let plan = ReferencePlan::new(model_name, model, &precision, phase, batch, context)?;
    let device = CudaDevice::open(0)?;
    let mut env = device.versions()?.env();
    env.insert("harness".into(), "reference".into());
    env.insert("graphs".into(), args.graphs.to_string());
    env.insert("utilgate".into(), env!("CARGO_PKG_VERSION").into());
    // Each step's line is written as the step ends (the step is synchronised before its
    // callback), so the GPU readings can place the timed window for energy per token.
    let io_error = |source| Error::Io {
        path: out_path.clone().into(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&out_path)
        .map_err(io_error)?;
    let head = serde_json::json!({ "env": env, "reference_bytes": plan.total_bytes(), "reference_flops": plan.flops() });
    file.write_all(format!("{head}\n").as_bytes())
        .map_err(io_error)?;
    let mut failed = None;
    device.run_reference(&plan, args.graphs, warmup, steps, &mut |ms, warm| {
        let line = if warm {
            format!("{{\"step_ms\": {ms}, \"warmup\": true}}\n")
        } else {
            format!("{{\"step_ms\": {ms}}}\n")
        };
        if failed.is_none()
            && let Err(err) = file.write_all(line.as_bytes())
        {
            failed = Some(err);
        }
    })?;
    match failed {
        Some(source) => Err(io_error(source)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_command_is_a_valid_template_and_quotes_the_path() {
        let cmd = reference_command("/tmp/it's here/utilgate.toml", true);
        crate::case::check_command_template(&cmd).expect("valid template");
        let words = shlex::split(&cmd).expect("one shell line");
        assert_eq!(
            words[..5],
            ["{{", "utilgate", "}}", "harness", "reference"].map(String::from)
        );
        assert!(
            words
                .windows(2)
                .any(|w| w == ["--config", "/tmp/it's here/utilgate.toml"]),
            "{cmd}"
        );
        assert!(cmd.ends_with("--kv-dtype {{ kv_dtype }} --graphs"), "{cmd}");
        assert!(!reference_command("/x", false).contains("--graphs"));
    }
}
