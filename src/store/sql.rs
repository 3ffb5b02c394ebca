//! One connection interface over the two store backends, `SQLite` (rusqlite) and `PostgreSQL`
//! (the synchronous `postgres` client), shaped like the part of rusqlite the store's queries
//! use: `execute`, `query_row`, `prepare_cached` + `query_map`, transactions, `params!`. The
//! queries are written once, in `SQLite`'s dialect with `?N` placeholders; on `PostgreSQL`
//! [`dialect`] rewrites them (placeholders, `INSERT OR IGNORE`) and the schema's DDL. Does I/O.

pub(crate) mod dialect;
mod pg;
mod sqlite;
mod tls;
mod value;

use std::cell::RefCell;
use std::ops::Deref;

use thiserror::Error;

pub(crate) use pg::{PgTarget, connect as connect_pg, is_lost, is_url};
pub(crate) use tls::tls_failure;
pub(crate) use value::{Params, Row, ToValue, Value, params, params_from_iter};

/// A failure of one statement, from either backend.
#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", pg::describe(.0))]
    Pg(#[from] postgres::Error),
    #[error("the query returned no rows")]
    NoRows,
    #[error("the query has no such column")]
    Column,
    #[error("column {idx} holds {got}, not {want}")]
    Type {
        idx: usize,
        want: &'static str,
        got: &'static str,
    },
    #[error("PostgreSQL answered a column of type {0}, which the store does not use")]
    PgType(String),
}

/// The result of one statement.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// `.optional()` on a single-row answer, like rusqlite's.
pub(crate) trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoRows | Error::Sqlite(rusqlite::Error::QueryReturnedNoRows)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// How a transaction takes its locks: `Immediate` is a writer's (it waits for, and then holds,
/// the store's single write lock), `Deferred` a reader's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransactionBehavior {
    Deferred,
    Immediate,
}

/// A connection to the store's database.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one connection per store, held for the process"
)]
pub(crate) enum Conn {
    Sqlite(rusqlite::Connection),
    /// The client needs `&mut` for every statement; the store is used from one thread.
    Pg(RefCell<pg::PgClient>),
}

impl Conn {
    /// The rusqlite connection, when this is `SQLite` (pragmas, `SQLite`-only checks).
    pub(crate) fn sqlite(&self) -> Option<&rusqlite::Connection> {
        match self {
            Conn::Sqlite(c) => Some(c),
            Conn::Pg(_) => None,
        }
    }

    /// Whether this is a `PostgreSQL` connection.
    pub(crate) fn is_pg(&self) -> bool {
        matches!(self, Conn::Pg(_))
    }

    /// Every row of `sql`'s answer, each passed to `f`.
    fn rows<T>(
        &self,
        sql: &str,
        params: &[Value],
        f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        match self {
            Conn::Sqlite(c) => sqlite::rows(c, sql, params, f),
            Conn::Pg(c) => pg::rows(&mut c.borrow_mut(), sql, params, f),
        }
    }

    /// Runs one statement; the number of rows it changed.
    pub(crate) fn execute<P: Params>(&self, sql: &str, params: P) -> Result<usize> {
        match self {
            Conn::Sqlite(c) => sqlite::execute(c, sql, &params.values()),
            Conn::Pg(c) => pg::execute(&mut c.borrow_mut(), sql, &params.values()),
        }
    }

    /// Runs several statements without parameters (DDL, pragmas).
    pub(crate) fn execute_batch(&self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Conn::Pg(c) => c.borrow_mut().batch(sql),
        }
    }

    /// The first row of the answer, or [`Error::NoRows`].
    pub(crate) fn query_row<T, P: Params>(
        &self,
        sql: &str,
        params: P,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut first = None;
        let mut seen = false;
        self.rows(sql, &params.values(), |r| {
            if !seen {
                seen = true;
                first = Some(f(r));
            }
            Ok(())
        })?;
        first.unwrap_or(Err(Error::NoRows))
    }

    /// A statement to run several times (`SQLite` caches its compiled form).
    #[expect(
        clippy::unnecessary_wraps,
        reason = "rusqlite's signature, so that the queries read alike on both backends"
    )]
    pub(crate) fn prepare_cached(&self, sql: &str) -> Result<Stmt<'_>> {
        Ok(Stmt {
            conn: self,
            sql: sql.to_owned(),
        })
    }

    /// A statement (the same as [`Conn::prepare_cached`]).
    pub(crate) fn prepare(&self, sql: &str) -> Result<Stmt<'_>> {
        self.prepare_cached(sql)
    }

    /// The id of the row the last `INSERT` on this connection created (`SQLite`'s rowid; on
    /// `PostgreSQL` the value last drawn from an identity column, `lastval()`).
    pub(crate) fn last_insert_rowid(&self) -> Result<i64> {
        match self {
            Conn::Sqlite(c) => Ok(c.last_insert_rowid()),
            Conn::Pg(_) => self.query_row("SELECT lastval()", [], |r| r.get(0)),
        }
    }

    /// Starts a transaction. An immediate one holds the store's write lock until it ends
    /// (`BEGIN IMMEDIATE`; on `PostgreSQL` a transaction-scoped advisory lock, so that runs, and
    /// their baseline moves, are written one whole run at a time, as on `SQLite`).
    pub(crate) fn transaction_with_behavior(
        &mut self,
        behavior: TransactionBehavior,
    ) -> Result<Transaction<'_>> {
        match (&*self, behavior) {
            (Conn::Sqlite(_), TransactionBehavior::Immediate) => {
                self.execute_batch("BEGIN IMMEDIATE")?;
            }
            (Conn::Sqlite(_) | Conn::Pg(_), TransactionBehavior::Deferred) => {
                self.execute_batch("BEGIN")?;
            }
            (Conn::Pg(_), TransactionBehavior::Immediate) => {
                self.execute_batch("BEGIN")?;
                if let Err(e) = self.execute_batch(pg::WRITE_LOCK) {
                    let _ = self.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        Ok(Transaction {
            conn: self,
            done: false,
        })
    }

    /// A deferred transaction.
    pub(crate) fn transaction(&mut self) -> Result<Transaction<'_>> {
        self.transaction_with_behavior(TransactionBehavior::Deferred)
    }
}

/// A statement bound to its connection.
#[derive(Debug)]
pub(crate) struct Stmt<'c> {
    conn: &'c Conn,
    sql: String,
}

impl Stmt<'_> {
    /// Every row of the answer mapped by `f`, as an iterator of results like rusqlite's.
    pub(crate) fn query_map<T, P: Params>(
        &mut self,
        params: P,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<std::vec::IntoIter<Result<T>>> {
        let rows = self.conn.rows(&self.sql, &params.values(), |r| Ok(f(r)))?;
        Ok(rows.into_iter())
    }

    /// The first row of the answer, or [`Error::NoRows`].
    pub(crate) fn query_row<T, P: Params>(
        &mut self,
        params: P,
        f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.conn.query_row(&self.sql, params, f)
    }

    /// Runs the statement; the number of rows it changed.
    pub(crate) fn execute<P: Params>(&mut self, params: P) -> Result<usize> {
        self.conn.execute(&self.sql, params)
    }
}

/// An open transaction; dropped without [`Transaction::commit`], it rolls back.
#[derive(Debug)]
pub(crate) struct Transaction<'c> {
    conn: &'c mut Conn,
    done: bool,
}

impl Transaction<'_> {
    /// Commits; a failed commit leaves the transaction to the drop, which rolls it back.
    pub(crate) fn commit(mut self) -> Result<()> {
        self.conn.execute_batch("COMMIT")?;
        self.done = true;
        Ok(())
    }

    pub(crate) fn rollback(mut self) -> Result<()> {
        self.done = true;
        self.conn.execute_batch("ROLLBACK")
    }
}

impl Deref for Transaction<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.done {
            // Nothing to report from a drop: a failed rollback leaves a connection that the
            // server (or SQLite, on close) rolls back anyway.
            let _ = self.conn.execute_batch("ROLLBACK");
        }
    }
}
