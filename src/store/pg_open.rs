//! Opening a `PostgreSQL` store (`[store] url`, `--db postgres://...`, `UTILGATE_DB`): connecting
//! with a bounded timeout, migrating (writers) or checking the version (readers). The store's
//! name in every message is the URL without its password. Does network I/O.

use std::path::PathBuf;

use super::db::Store;
use super::error::StoreError;
use super::schema;
use super::sql::{self, PgTarget};

impl Store {
    /// Connects to the `PostgreSQL` store at `url`. A writer (`migrate`) creates or upgrades the
    /// schema; a reader requires it at exactly this build's version. A database at a newer
    /// version is refused either way, before anything is written.
    pub(crate) fn open_pg(url: &str, migrate: bool) -> Result<Store, StoreError> {
        let target = PgTarget::parse(url).map_err(|detail| StoreError::BadUrl {
            url: redact(url),
            detail,
        })?;
        let path = PathBuf::from(&target.display);
        let mut conn = sql::connect_pg(&target).map_err(|e| connect_error(&path, e))?;
        if migrate {
            schema::migrate(&mut conn, &path, schema::LATEST)?;
        } else {
            let found = schema::version(&conn)
                .map_err(|e| StoreError::query(&path, "read the schema version", e))?;
            if found == 0 {
                return Err(StoreError::NoSchemaYet { path });
            }
            if found != schema::LATEST {
                let (known, newer) = (schema::LATEST, found > schema::LATEST);
                return Err(if newer {
                    StoreError::NewerSchema { path, found, known }
                } else {
                    StoreError::OutdatedSchema { path, found, known }
                });
            }
        }
        Ok(Store { conn, path })
    }
}

/// A failed connection: a refused login is [`StoreError::Login`], anything else (refused,
/// unreachable, timed out) [`StoreError::Connect`].
fn connect_error(path: &std::path::Path, e: sql::Error) -> StoreError {
    if let Some(detail) = match &e {
        sql::Error::Pg(pg) => sql::tls_failure(pg),
        _ => None,
    } {
        return StoreError::Tls {
            path: path.to_owned(),
            detail,
        };
    }
    match StoreError::query(path, "connect", e) {
        StoreError::Login { path, source } => StoreError::Login { path, source },
        StoreError::Query { path, source, .. } | StoreError::Lost { path, source } => {
            StoreError::Connect { path, source }
        }
        other => other,
    }
}

/// A URL as it may be shown: the password (between `user:` and `@`) and every option removed.
pub(crate) fn redact(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let rest = rest.split_once('?').map_or(rest, |(head, _)| head);
    let (authority, tail) = rest.split_once('/').map_or((rest, ""), |(a, t)| (a, t));
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{user}@{host}")
        }
        None => authority.to_owned(),
    };
    format!("{scheme}://{authority}/{tail}")
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn the_password_never_shows() {
        assert_eq!(
            redact("postgres://ci:s3cret@db.example:5432/gate?sslmode=require&password=x"),
            "postgres://ci@db.example:5432/gate"
        );
        assert_eq!(redact("postgresql://h/db"), "postgresql://h/db");
    }
}
