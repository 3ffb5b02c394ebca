//! The `PostgreSQL` side of the connection interface: connecting (URL, `PGPASSWORD`, a bounded
//! connect timeout), statements rewritten by [`dialect`](super::dialect) and prepared once per
//! connection, values converted to and from [`Value`] by the declared column and parameter
//! types. Does network I/O.

use std::cell::RefCell;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::time::Duration;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, Config, NoTls};

use super::value::{Row, Value};
use super::{Conn, Error, Result, dialect};

/// Taken at the start of every writing transaction and held to its end: one writer at a time
/// on one database, as `SQLite`'s `BEGIN IMMEDIATE` does, so that two runs' baseline moves can
/// never interleave. The key is "utilgate" in ASCII.
pub(super) const WRITE_LOCK: &str = "SELECT pg_advisory_xact_lock(7310575183000000000)";

/// How long connecting may take when the URL does not say (`connect_timeout=SECONDS`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A `PostgreSQL` connection with its statements prepared once each.
pub(crate) struct PgClient {
    client: Client,
    prepared: HashMap<String, postgres::Statement>,
}

impl std::fmt::Debug for PgClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgClient")
            .field("prepared", &self.prepared.len())
            .finish_non_exhaustive()
    }
}

/// Where a `postgres://` store lives, parsed from its URL, and how to name it in messages (the
/// password never appears).
#[derive(Clone)]
pub(crate) struct PgTarget {
    config: Config,
    /// The TLS connector (`sslmode`, `sslrootcert`); `None`: no TLS (`disable`, a Unix socket).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    /// `postgres://user@host:port/dbname`, without password or options.
    pub(crate) display: String,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTarget")
            .field("display", &self.display)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// Whether `s` names a `PostgreSQL` store rather than an `SQLite` file.
pub(crate) fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

impl PgTarget {
    /// Parses a `postgres://` URL; the password comes from the URL or else `PGPASSWORD`.
    pub(crate) fn parse(url: &str) -> std::result::Result<PgTarget, String> {
        let (url, tls) = super::tls::split_url(url)?;
        let mut config: Config = url.parse().map_err(|e: postgres::Error| e.to_string())?;
        // libpq never uses TLS on a Unix socket, whatever sslmode says.
        #[cfg(unix)]
        let socket = matches!(
            config.get_hosts().first(),
            Some(postgres::config::Host::Unix(_))
        );
        #[cfg(not(unix))]
        let socket = false;
        let tls = if socket {
            config.ssl_mode(postgres::config::SslMode::Disable);
            None
        } else {
            config.ssl_mode(tls.mode.negotiated());
            super::tls::connector(&tls)?
        };
        if config.get_password().is_none() {
            #[expect(
                clippy::disallowed_methods,
                reason = "edge: libpq's PGPASSWORD, read where the connection is made"
            )]
            if let Ok(pw) = std::env::var("PGPASSWORD") {
                config.password(pw);
            }
        }
        // Whatever is printed from here on masks the password, wherever it came from.
        if let Some(pw) = config.get_password() {
            crate::redact::register_secrets([String::from_utf8_lossy(pw).into_owned()]);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let display = display_of(&config);
        Ok(PgTarget {
            config,
            tls,
            display,
        })
    }
}

fn display_of(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{host}:{port}/{db}")
}

/// Connects, over TLS as the URL's `sslmode` says (see [`tls`](super::tls)): a mode that
/// requires TLS fails before anything, the password included, is sent in the clear.
pub(crate) fn connect(target: &PgTarget) -> Result<Conn> {
    let client = match &target.tls {
        Some(tls) => target.config.connect(tls.clone())?,
        None => target.config.connect(NoTls)?,
    };
    Ok(Conn::Pg(RefCell::new(PgClient {
        client,
        prepared: HashMap::new(),
    })))
}

/// The error's text without anything the server could echo of the URL.
pub(super) fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

/// Whether the connection to the server is gone (closed, reset, the server shutting down).
pub(crate) fn is_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let c = code.code();
        return c.starts_with("08") || c.starts_with("57P");
    }
    matches!(e.source(), Some(s) if s.is::<std::io::Error>())
}

impl PgClient {
    /// The prepared statement for `sql`. Where the server cannot infer a parameter's type
    /// (`?1 IS NULL OR branch = ?1` reads `$1` before it is compared), the statement is
    /// prepared again with the types of the values bound (NULL as text), as `SQLite` would
    /// take them.
    fn statement(&mut self, sql: &str, params: &[Value]) -> Result<postgres::Statement> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let text = dialect::translate(sql);
        match self.client.prepare(&text) {
            Ok(stmt) => {
                self.prepared.insert(sql.to_owned(), stmt.clone());
                Ok(stmt)
            }
            Err(e) if untyped(&e) => {
                let types: Vec<Type> = params.iter().map(declared_type).collect();
                Ok(self.client.prepare_typed(&text, &types)?)
            }
            Err(e) => Err(e.into()),
        }
    }

    pub(super) fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.client.batch_execute(sql)?)
    }
}

fn bind(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

pub(super) fn rows<T>(
    pg: &mut PgClient,
    sql: &str,
    params: &[Value],
    mut f: impl FnMut(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let stmt = pg.statement(sql, params)?;
    let answer = pg.client.query(&stmt, &bind(params))?;
    let mut out = Vec::with_capacity(answer.len());
    let mut values = Vec::new();
    let names: Vec<String> = stmt.columns().iter().map(|c| c.name().to_owned()).collect();
    for row in &answer {
        values.clear();
        for i in 0..row.len() {
            values.push(column(row, i)?);
        }
        out.push(f(&Row {
            names: &names,
            values: &values,
        })?);
    }
    Ok(out)
}

pub(super) fn execute(pg: &mut PgClient, sql: &str, params: &[Value]) -> Result<usize> {
    let stmt = pg.statement(sql, params)?;
    let n = pg.client.execute(&stmt, &bind(params))?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

fn column(row: &postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_();
    let v = match *ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::Int),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Value::Real),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)?
            .map(|v| Value::Real(v.into())),
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
            row.try_get::<_, Option<String>>(i)?.map(Value::Text)
        }
        Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(i)?.map(Value::Blob),
        _ => return Err(Error::PgType(ty.name().to_owned())),
    };
    Ok(v.unwrap_or(Value::Null))
}

/// The server could not tell a parameter's type (`42P08` ambiguous, `42P18` indeterminate).
fn untyped(e: &postgres::Error) -> bool {
    use postgres::error::SqlState;
    e.code().is_some_and(|c| {
        *c == SqlState::AMBIGUOUS_PARAMETER || *c == SqlState::INDETERMINATE_DATATYPE
    })
}

fn declared_type(v: &Value) -> Type {
    match v {
        Value::Int(_) => Type::INT8,
        Value::Real(_) => Type::FLOAT8,
        Value::Null | Value::Text(_) => Type::TEXT,
        Value::Blob(_) => Type::BYTEA,
    }
}

type BoxError = Box<dyn StdError + Sync + Send>;

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, BoxError> {
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(v), &Type::INT4) => i32::try_from(*v)?.to_sql_checked(ty, out),
            (Value::Int(v), &Type::INT2) => i16::try_from(*v)?.to_sql_checked(ty, out),
            (Value::Int(v), &Type::BOOL) => (*v != 0).to_sql_checked(ty, out),
            #[expect(
                clippy::cast_precision_loss,
                reason = "as SQLite compares an integer with a real"
            )]
            (Value::Int(v), &Type::FLOAT8) => (*v as f64).to_sql_checked(ty, out),
            (Value::Int(v), _) => v.to_sql_checked(ty, out),
            (Value::Real(v), _) => v.to_sql_checked(ty, out),
            (Value::Text(v), _) => v.as_str().to_sql_checked(ty, out),
            (Value::Blob(v), _) => v.as_slice().to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        // Each value checks its declared type in `to_sql` (through the Rust type it delegates
        // to), so a mismatch is a clear error rather than a silent conversion.
        true
    }

    to_sql_checked!();
}
