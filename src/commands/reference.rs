//! `utilgate harness reference`: the built-in `reference` workload as a harness process. A
//! suite with `workload = "reference"` runs it through the ordinary harness protocol (fresh
//! process per repeat, timeout, GPU sampling), so its steps are judged exactly like a user's.
//! Does I/O: the protocol's environment, the GPU, one output file.

use std::fmt::Write as _;
use std::io::Write as _;

use crate::case::Phase;
use crate::catalog::Precision;
use crate::cli::ReferenceArgs;
use crate::error::Error;
use crate::measure::cuda::CudaDevice;
use crate::measure::harness as protocol_env;
use crate::measure::reference::ReferencePlan;

fn env_var(name: &str) -> Result<String, Error> {
    #[expect(clippy::disallowed_methods, reason = "a harness reads the protocol's environment")]
    std::env::var(name).map_err(|_| {
        Error::Usage(format!(
            "{name} is not set: `utilgate harness reference` is started by `utilgate run` for a suite with workload = \"reference\""
        ))
    })
}

fn env_u64(name: &str) -> Result<u64, Error> {
    let text = env_var(name)?;
    text.parse()
        .map_err(|_| Error::Usage(format!("{name}={text:?} is not a whole number")))
}

/// The command `run` renders for a `workload = "reference"` suite: this binary as the harness.
#[must_use]
pub fn reference_command(config_path: &str, graphs: bool) -> String {
    let quoted = config_path.replace('\'', "'\\''");
    format!(
        "'{{{{ utilgate }}}}' harness reference --config '{quoted}' --kv-dtype '{{{{ kv_dtype }}}}'{}",
        if graphs { " --graphs" } else { "" }
    )
}

pub fn reference_harness(args: &ReferenceArgs) -> Result<(), Error> {
    let loaded = crate::config::load(&args.config)?;
    let model_name = env_var(protocol_env::UTILGATE_MODEL)?;
    let precision = Precision::parse(
        &env_var(protocol_env::UTILGATE_PRECISION)?,
        args.kv_dtype.as_deref(),
    )?;
    let phase: Phase = env_var(protocol_env::UTILGATE_PHASE)?
        .parse()
        .map_err(Error::Usage)?;
    let batch = env_u64(protocol_env::UTILGATE_BATCH)?;
    let context = env_u64(protocol_env::UTILGATE_CONTEXT)?;
    let warmup = env_u64(protocol_env::UTILGATE_WARMUP_STEPS)?;
    let steps = env_u64(protocol_env::UTILGATE_STEPS)?;
    let out_path = env_var(protocol_env::UTILGATE_OUT)?;
    let model = loaded.models.get(&model_name).ok_or_else(|| {
        Error::Usage(format!(
            "model {model_name:?} is not in {}",
            loaded.path.display()
        ))
    })?;
    let plan = ReferencePlan::new(&model_name, model, &precision, phase, batch, context)?;
    let device = CudaDevice::open(0)?;
    let mut env = device.versions()?.env();
    env.insert("harness".into(), "reference".into());
    env.insert("graphs".into(), args.graphs.to_string());
    env.insert("utilgate".into(), env!("CARGO_PKG_VERSION").into());
    let mut lines = String::new();
    let _ = writeln!(
        lines,
        "{}",
        serde_json::json!({ "env": env, "reference_bytes": plan.total_bytes(), "reference_flops": plan.flops() })
    );
    device.run_reference(&plan, args.graphs, warmup, steps, &mut |ms, warm| {
        if warm {
            let _ = writeln!(lines, "{{\"step_ms\": {ms}, \"warmup\": true}}");
        } else {
            let _ = writeln!(lines, "{{\"step_ms\": {ms}}}");
        }
    })?;
    let write = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&out_path)
        .and_then(|mut f| f.write_all(lines.as_bytes()));
    write.map_err(|source| Error::Io {
        path: out_path.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_command_is_a_valid_template_and_quotes_the_path() {
        let cmd = reference_command("/tmp/it's here/utilgate.toml", true);
        crate::case::check_command_template(&cmd).expect("valid template");
        assert!(
            cmd.starts_with(
                "'{{ utilgate }}' harness reference --config '/tmp/it'\\''s here/utilgate.toml'"
            ),
            "{cmd}"
        );
        assert!(
            cmd.ends_with("--kv-dtype '{{ kv_dtype }}' --graphs"),
            "{cmd}"
        );
        assert!(!reference_command("/x", false).contains("--graphs"));
    }
}
