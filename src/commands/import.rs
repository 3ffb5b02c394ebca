//! `utilgate import run FILE`: stores a run that `utilgate run` measured but could not write
//! (the rescue file it printed), in one transaction. Sequences I/O only. (`import serve`, for
//! load-generator results, joins this group.)

use std::fmt::Write as _;

use crate::cli::ImportRunArgs;
use crate::commands::Outcome;
use crate::commands::resume::RescuedRun;
use crate::commands::runs::{StoreMode, store_with};
use crate::error::Error;
use crate::output;
use crate::store::journal;

pub fn import_run(args: &ImportRunArgs) -> Result<Outcome, Error> {
    // Read and check the file before touching the store.
    let RescuedRun {
        mut run,
        publish,
        mut serve,
    } = journal::read_rescue(&args.file)?;
    let (mut store, _) = store_with(&args.config, StoreMode::Create)?;
    let promoted = run.results.iter().filter(|r| r.promote).count()
        + serve.iter().filter(|c| c.promote).count();
    if !args.promote {
        // Newer runs may have moved these baselines since: moving them back is a decision.
        for result in &mut run.results {
            result.promote = false;
        }
        for case in &mut serve {
            case.promote = false;
        }
    }
    let id = store.insert_run_with_serve(&run, publish.as_ref(), &serve)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "stored run {id} ({} result(s), measured {} on {}) from {}",
        run.results.len() + serve.len(),
        run.started_at,
        run.gpu_sku,
        args.file.display()
    );
    if promoted > 0 && !args.promote {
        let _ = writeln!(
            out,
            "baselines unchanged: the run would have promoted {promoted}; pass --promote to move them, or `utilgate baseline accept`"
        );
    }
    let _ = writeln!(
        out,
        "the rescue file is no longer needed: delete {}",
        args.file.display()
    );
    output::emit(&out)?;
    Ok(Outcome::Passed)
}
