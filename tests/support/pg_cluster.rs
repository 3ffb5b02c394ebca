//! A throwaway `PostgreSQL` cluster for the tests (I/O: runs `initdb` and `postgres` from the
//! Debian server package in a temporary directory, on a Unix socket only, as `nobody` when the
//! tests run as root). Shared by the store's unit tests and the CLI tests.
//!
//! The server runs under a small `sh` that holds a pipe from the test process: when the test
//! process ends, however it ends, the pipe closes and the shell stops the server and removes its
//! directory, so no cluster outlives its tests. The tests that use it are `#[ignore]`d with
//! what they need (`cargo test` says so), and `.ci/run` runs them; there, a missing server
//! fails them.

#![allow(
    dead_code,
    clippy::disallowed_methods,
    clippy::print_stderr,
    reason = "test support shared by two crates (each uses a part); it starts servers and says when it cannot"
)]

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The superuser's password of every test cluster.
pub const PASSWORD: &str = "utilgate-test-password";
const USER: &str = "utilgate";

/// A running cluster; dropped, its server stops and its directory goes.
pub struct Cluster {
    dir: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
    /// The loopback TCP port of a cluster started with TLS.
    port: Option<u16>,
}

/// A server certificate and its key (PEM files) for [`Cluster::start_tls`].
pub struct ServerCert<'a> {
    pub cert: &'a Path,
    pub key: &'a Path,
}

/// The directory holding `initdb` and `postgres`: `PATH`, else the newest Debian version.
pub fn bin_dir() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let on_path = std::env::split_paths(&path).find(|d| d.join("initdb").is_file());
    on_path.or_else(|| {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| Some(e.ok()?.path().join("bin")))
            .filter(|d| d.join("initdb").is_file())
            .collect();
        dirs.sort();
        dirs.pop()
    })
}

/// The server binaries; a test that asked for them fails where they are absent.
pub fn binaries() -> PathBuf {
    bin_dir().expect(
        "the PostgreSQL server binaries (initdb, postgres) are missing: install Debian's \
         postgresql package (.ci/run does)",
    )
}

/// The cluster shared by one test process (each test takes a database of its own).
pub fn shared() -> &'static Cluster {
    static SHARED: OnceLock<Cluster> = OnceLock::new();
    SHARED.get_or_init(Cluster::start)
}

fn nobody() -> Option<(u32, u32)> {
    if !nix::unistd::Uid::effective().is_root() {
        return None;
    }
    let user = nix::unistd::User::from_name("nobody").ok().flatten()?;
    Some((user.uid.as_raw(), user.gid.as_raw()))
}

fn as_server_user(cmd: &mut Command) -> &mut Command {
    if let Some((uid, gid)) = nobody() {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

impl Cluster {
    /// Creates and starts a new cluster.
    pub fn start() -> Cluster {
        Self::start_with(None, "scram-sha-256")
    }

    /// Creates and starts a cluster whose Unix socket lets any local user in as any role with
    /// no password (`trust`, as `peer` lets in the socket's own OS user): what a harness of the
    /// store's user reaches without holding any secret (#28).
    pub fn start_trust() -> Cluster {
        Self::start_with(None, "trust")
    }

    /// Creates and starts a cluster that also listens on a loopback TCP port with `ssl = on`
    /// and this certificate, and accepts TCP connections only over TLS (`hostssl`).
    pub fn start_tls(cert: &ServerCert<'_>) -> Cluster {
        Self::start_with(Some(cert), "scram-sha-256")
    }

    fn start_with(tls: Option<&ServerCert<'_>>, auth: &str) -> Cluster {
        let bin = binaries();
        let dir = tempfile::Builder::new()
            .prefix("utilgate-pg-")
            .tempdir()
            .expect("tempdir")
            .keep();
        if let Some((uid, gid)) = nobody() {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown");
        }
        let pwfile = dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).expect("password file");
        if let Some((uid, gid)) = nobody() {
            std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).expect("chown");
        }
        let out = as_server_user(Command::new(bin.join("initdb")).args([
            "-D",
            &dir.join("data").to_string_lossy(),
            "-U",
            USER,
            "--pwfile",
            &pwfile.to_string_lossy(),
            &format!("--auth={auth}"),
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ]))
        .output()
        .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (port, options) = match tls {
            Some(cert) => tls_options(&dir, cert),
            None => (None, "-c listen_addresses=".to_owned()),
        };
        // The shell starts the server again on "start" and, on anything else or when the test
        // process closes its end of the pipe, stops it (immediate shutdown) and removes the
        // directory.
        let script = "b=$0; d=$1; o=$2; run() { \"$b\" -D \"$d/data\" -k \"$d\" $o \
             -c fsync=off -c max_connections=100 >>\"$d/log\" 2>&1 & \
             p=$!; }; run; while read c && [ \"$c\" = start ]; do run; done; \
             kill -QUIT $p; wait $p; rm -rf \"$d\"";
        let mut child = as_server_user(
            Command::new("sh")
                .args(["-c", script])
                .arg(bin.join("postgres"))
                .arg(&dir)
                .arg(&options)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .spawn()
        .expect("start postgres");
        let stdin = child.stdin.take();
        let cluster = Cluster {
            dir,
            child,
            stdin,
            port,
        };
        cluster.wait_ready();
        cluster
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        while postgres::Client::connect(&self.url("postgres"), postgres::NoTls).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the test PostgreSQL server did not start: {}",
                std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The socket's port where it is not the default (`&port=N`).
    fn port_param(&self) -> String {
        self.port.map(|p| format!("&port={p}")).unwrap_or_default()
    }

    /// A URL for database `db` over loopback TCP (a cluster from [`Cluster::start_tls`]), with
    /// `host` as the name to connect to and `query` appended (`sslmode=...`).
    pub fn tcp_url(&self, host: &str, db: &str, query: &str) -> String {
        let port = self.port.expect("a cluster started with TLS");
        format!("postgres://{USER}:{PASSWORD}@{host}:{port}/{db}?{query}")
    }

    /// The directory holding the server's socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// A URL for database `db`, password included.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@localhost/{db}?host={}{}",
            self.dir.display(),
            self.port_param()
        )
    }

    /// A URL for database `db` without the password (it then comes from `PGPASSWORD`).
    pub fn url_without_password(&self, db: &str) -> String {
        format!(
            "postgres://{USER}@localhost/{db}?host={}{}",
            self.dir.display(),
            self.port_param()
        )
    }

    /// A new, empty database with a name of its own.
    pub fn new_database(&self) -> String {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "t{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut admin =
            postgres::Client::connect(&self.url("postgres"), postgres::NoTls).expect("admin");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create database");
        name
    }

    /// Kills the server at once (`SIGKILL` to the postmaster and, as it dies, its backends see
    /// their connections cut), as a crash or a pulled cable would.
    pub fn kill_server(&self) {
        let pidfile = self.dir.join("data/postmaster.pid");
        let text = std::fs::read_to_string(pidfile).expect("postmaster.pid");
        let pid: i32 = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .expect("pid");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGQUIT,
        );
        let start = Instant::now();
        while self.dir.join("data/postmaster.pid").exists()
            && start.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Cluster {
    /// Starts the server again after [`Cluster::kill_server`], on the same data.
    pub fn restart(&mut self) {
        if let Some(stdin) = self.stdin.as_mut() {
            stdin.write_all(b"start\n").expect("restart the server");
            stdin.flush().expect("restart the server");
        }
        self.wait_ready();
    }
}

/// Copies the certificate and key where the server user reads them, lets TCP in over TLS only,
/// and picks a free loopback port: the port and the server's options.
fn tls_options(dir: &Path, cert: &ServerCert<'_>) -> (Option<u16>, String) {
    use std::os::unix::fs::PermissionsExt as _;
    for (from, name) in [(cert.cert, "server.crt"), (cert.key, "server.key")] {
        let to = dir.join(name);
        std::fs::copy(from, &to).expect("copy the certificate");
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        if let Some((uid, gid)) = nobody() {
            std::os::unix::fs::chown(&to, Some(uid), Some(gid)).expect("chown");
        }
    }
    std::fs::write(
        dir.join("data/pg_hba.conf"),
        "local all all scram-sha-256\n\
         hostssl all all 127.0.0.1/32 scram-sha-256\n\
         hostnossl all all 127.0.0.1/32 reject\n",
    )
    .expect("pg_hba.conf");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let d = dir.display();
    let options = format!(
        "-c listen_addresses=127.0.0.1 -p {port} -c ssl=on \
         -c ssl_cert_file={d}/server.crt -c ssl_key_file={d}/server.key"
    );
    (Some(port), options)
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"stop\n");
        }
        let _ = self.child.wait();
    }
}
