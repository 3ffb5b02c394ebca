//! The site's pages rendered on several threads: each case page and run page is an independent
//! read of the store and write of one file, and a connection is one thread's, so each worker
//! reads through its own. The build's own connection works too; a worker whose connection
//! cannot be opened leaves its share to the others, so the pages are the same either way.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::error::Error;
use crate::pipeline::context::CommitLog;
use crate::store::Store;

/// Opens another connection to the store the build reads.
pub(crate) type OpenStore<'a> = &'a (dyn Fn() -> Result<Store, Error> + Sync);

/// The most threads a build uses, whatever the machine.
const MAX_WORKERS: usize = 8;
/// Pages per extra thread at least: a connection costs about as much as a few pages.
const PAGES_PER_WORKER: usize = 8;

/// `work` applied to every item, on up to one thread per core; the results in `items`' order,
/// or the first error (the other threads stop at their next item).
pub(crate) fn each<T: Sync, R: Send>(
    store: &Store,
    open: OpenStore<'_>,
    items: &[T],
    work: &(dyn Fn(&Store, &mut CommitLog, &T) -> Result<R, Error> + Sync),
) -> Result<Vec<R>, Error> {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let workers = cores
        .min(MAX_WORKERS)
        .min(items.len().div_ceil(PAGES_PER_WORKER))
        .max(1);
    if workers == 1 {
        let mut log = CommitLog::default();
        return items
            .iter()
            .map(|item| work(store, &mut log, item))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let share = |s: &Store| -> Result<Vec<(usize, R)>, Error> {
        let mut log = CommitLog::default();
        let mut out = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            match work(s, &mut log, item) {
                Ok(r) => out.push((i, r)),
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok(out)
    };
    let mut done: Vec<(usize, R)> = Vec::with_capacity(items.len());
    let mut first_error = None;
    std::thread::scope(|scope| {
        let threads: Vec<_> = (1..workers)
            .map(|_| {
                scope.spawn(|| match open() {
                    Ok(own) => share(&own),
                    Err(_) => Ok(Vec::new()),
                })
            })
            .collect();
        let mut take = |r: Result<Vec<(usize, R)>, Error>| match r {
            Ok(v) => done.extend(v),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        };
        take(share(store));
        for thread in threads {
            match thread.join() {
                Ok(r) => take(r),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    done.sort_by_key(|(i, _)| *i);
    Ok(done.into_iter().map(|(_, r)| r).collect())
}
