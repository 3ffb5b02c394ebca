//! TLS to a `PostgreSQL` store through the binary (issue #18): a throwaway cluster with `ssl = on`,
//! a CA and a server certificate made here with the openssl CLI, and TCP allowed over TLS only.
//! `require` encrypts, `verify-full` checks the chain and the name, `verify-ca` only the chain; a
//! certificate from another CA, or for another name, is refused with a clear message; the password
//! is never printed.

use std::path::Path;
use std::process::{Command, Output};

use crate::env::{TestEnv, stderr};
use crate::pg_cluster::{self, Cluster, ServerCert};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl CLI (Debian's openssl, which the postgresql package pulls in)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA (`name.crt`, `name.key`), self-signed, for one day.
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            &format!("/CN={name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

/// A server certificate for `localhost` only, signed by the CA `ca`.
fn make_server_cert(dir: &Path, ca: &str) {
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write");
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
    );
}

fn run_on(env: &TestEnv, url: &str) -> Output {
    env.run_trusted("main", &[("UTILGATE_DB", url)])
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql) and openssl; .ci/run runs them: cargo test -- --ignored pg_store"]
fn pg_store_tls_modes_connect_verify_and_refuse_clearly() {
    let certs = tempfile::tempdir().expect("tempdir");
    make_ca(certs.path(), "ca");
    make_ca(certs.path(), "other-ca");
    make_server_cert(certs.path(), "ca");
    let cluster = Cluster::start_tls(&ServerCert {
        cert: &certs.path().join("server.crt"),
        key: &certs.path().join("server.key"),
    });
    let db = cluster.new_database();
    let root = |name: &str| {
        certs
            .path()
            .join(format!("{name}.crt"))
            .display()
            .to_string()
    };
    let env = TestEnv::new();
    let ok = |url: String| {
        let out = run_on(&env, &url);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{url}: {err}");
        assert!(!err.contains(pg_cluster::PASSWORD), "{err}");
    };
    // The server refuses TCP without TLS: every connection that works below is encrypted.
    let out = run_on(&env, &cluster.tcp_url("localhost", &db, "sslmode=disable"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains(pg_cluster::PASSWORD),
        "{}",
        stderr(&out)
    );

    ok(cluster.tcp_url("localhost", &db, "sslmode=require"));
    ok(cluster.tcp_url("localhost", &db, ""));
    ok(cluster.tcp_url(
        "localhost",
        &db,
        &format!("sslmode=verify-full&sslrootcert={}", root("ca")),
    ));
    // verify-ca checks the chain, not the name: 127.0.0.1 is not in the certificate.
    ok(cluster.tcp_url(
        "127.0.0.1",
        &db,
        &format!("sslmode=verify-ca&sslrootcert={}", root("ca")),
    ));

    let refused = |url: String, why: &str| {
        let out = run_on(&env, &url);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert!(err.contains("refused the TLS connection"), "{err}");
        assert!(err.contains(why), "{err}");
        assert!(err.contains("sslrootcert"), "the hint names the fix: {err}");
        assert!(!err.contains(pg_cluster::PASSWORD), "{err}");
    };
    refused(
        cluster.tcp_url(
            "localhost",
            &db,
            &format!("sslmode=verify-full&sslrootcert={}", root("other-ca")),
        ),
        "not signed by a CA in sslrootcert",
    );
    refused(
        cluster.tcp_url(
            "127.0.0.1",
            &db,
            &format!("sslmode=verify-full&sslrootcert={}", root("ca")),
        ),
        "does not name the host",
    );
    // A root file that is not there is named, before any connection.
    let out = run_on(
        &env,
        &cluster.tcp_url(
            "localhost",
            &db,
            "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
        ),
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    assert!(!err.contains(pg_cluster::PASSWORD), "{err}");

    let mut client =
        postgres::Client::connect(&cluster.url(&db), postgres::NoTls).expect("connect");
    let n: i64 = client
        .query_one("SELECT count(*) FROM runs", &[])
        .expect("count")
        .get(0);
    assert_eq!(n, 4, "the four runs that connected were stored");
}
