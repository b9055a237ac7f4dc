//! Real servers for the tests that need them: a PostgreSQL (the state store several daemons share)
//! and an HAProxy (the load balancer in front of them), both Debian's, installed by
//! scripts/services.sh. Each test starts its own, on 127.0.0.1 only and on ports of its own, so tests
//! run in parallel; dropping one stops it and removes its files. Missing programs print SKIPPED (or
//! fail, with TOOLHOST_REQUIRE_SERVICES), as `harness::service` decides.

use std::fs::File;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{EVENT_WAIT, poll, service};

/// A loopback port free a moment ago, for servers that cannot report a port they picked themselves.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A throw-away PostgreSQL cluster: superuser `toolhost`, trust authentication, one database
/// `toolhost`, fsync off (its data dies with the test). Dropping it stops the server.
pub(crate) struct Postgres {
    /// `postgres://toolhost@127.0.0.1:PORT/toolhost`: no password needed.
    pub(crate) url: String,
    /// The CA that signed the server's certificate, when started with TLS.
    pub(crate) ca: Option<PathBuf>,
    port: u16,
    /// The server's programs: `initdb`, `pg_ctl`, `postgres` (and usually the clients).
    bin: PathBuf,
    /// PostgreSQL refuses to run as root: then its programs run as Debian's `postgres` user.
    as_postgres: bool,
    running: bool,
    /// The cluster (`data/`), the server's `log`, its Unix socket, the programs' output.
    dir: tempfile::TempDir,
}

impl Postgres {
    /// Initialise a cluster and start its server on a free loopback port, or `None` (SKIPPED) when
    /// PostgreSQL is not installed. Panics, with the server's log, when it does not come up.
    pub(crate) fn start(test: &str) -> Option<Postgres> {
        Self::start_with(test, false)
    }

    /// [`Self::start`], serving TLS too with a certificate for 127.0.0.1 from a throw-away CA
    /// (openssl); the CA certificate's path is in [`Self::ca`].
    pub(crate) fn start_tls(test: &str) -> Option<Postgres> {
        service("openssl", test)?;
        Self::start_with(test, true)
    }

    fn start_with(test: &str, tls: bool) -> Option<Postgres> {
        let bin = match debian_bin() {
            Some(bin) => bin,
            None => {
                let initdb = service("initdb", test)?;
                // A link on PATH (/usr/local/bin/initdb) leads to the directory with its siblings.
                let initdb = initdb.canonicalize().unwrap_or(initdb);
                initdb.parent().unwrap().to_path_buf()
            }
        };
        for program in ["initdb", "pg_ctl", "postgres"] {
            assert!(
                bin.join(program).is_file(),
                "{test}: {} is missing (PostgreSQL's server programs are not all installed)",
                bin.join(program).display()
            );
        }
        let as_postgres = is_root();
        let mut dir = tempfile::Builder::new();
        dir.prefix("toolhost-pg-");
        // As root, under /tmp: the `postgres` user must reach the dir, and a TMPDIR might not let it.
        let dir = if as_postgres {
            dir.tempdir_in("/tmp")
        } else {
            dir.tempdir()
        }
        .unwrap();
        let ca = tls.then(|| {
            crate::harness::loopback_certificates(dir.path());
            dir.path().join("ca.pem")
        });
        if as_postgres {
            let out = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{test}: chown postgres {}: {}",
                dir.path().display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let port = free_port();
        let mut pg = Postgres {
            url: format!("postgres://toolhost@127.0.0.1:{port}/toolhost"),
            ca,
            port,
            bin,
            as_postgres,
            running: false,
            dir,
        };
        let data = pg.data();
        let dir = pg.dir.path().display().to_string();
        pg.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "toolhost",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        // Loopback only; the Unix socket in our dir, not /var/run/postgresql.
        let mut options = format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k '{dir}' -c fsync=off -c max_connections=100"
        );
        if pg.ca.is_some() {
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file='{dir}/leaf.pem' -c ssl_key_file='{dir}/leaf.key'"
            ));
        }
        let log = format!("{dir}/log");
        pg.running = true; // from here on, dropping it tries to stop it
        pg.run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-w", "-o", &options, "start"],
        );
        let port = port.to_string();
        pg.run(
            "createdb",
            &["-h", "127.0.0.1", "-p", &port, "-U", "toolhost", "toolhost"],
        );
        Some(pg)
    }

    /// Stop the server at once, as a crash would (`pg_ctl stop -m immediate`): no checkpoint, open
    /// connections cut.
    pub(crate) fn stop_now(&mut self) {
        if self.running {
            self.running = false;
            let data = self.data();
            self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        }
    }

    /// Run `sql` (one or more statements) in database `toolhost` with psql and return its
    /// unaligned, tuples-only output (`-At -q`: one row per line, columns split by `|`), for tests
    /// that look into the tables. Panics with psql's stderr when it fails.
    pub(crate) fn psql(&self, sql: &str) -> String {
        let psql = self.bin.join("psql");
        let psql = if psql.is_file() {
            psql
        } else {
            PathBuf::from("psql")
        };
        let port = self.port.to_string();
        let out = Command::new(psql)
            .args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"])
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "toolhost",
                "-d",
                "toolhost",
            ])
            .arg("-c")
            .arg(sql)
            .env("PGCONNECT_TIMEOUT", "10")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql -c {sql:?} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// The server's log so far.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// One of PostgreSQL's programs (as `postgres` when we are root), in the cluster's dir (the
    /// test's own working dir may be closed to `postgres`).
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let path = if path.is_file() {
            path
        } else {
            PathBuf::from(program)
        };
        let mut c = if self.as_postgres {
            let mut c = Command::new(runuser());
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        c.current_dir(self.dir.path()).stdin(Stdio::null());
        c
    }

    /// Run `program` to the end; on failure, panic with its output and the server's log. Its output
    /// goes to a file, not a pipe: nothing the server might inherit can keep us waiting.
    fn run(&self, program: &str, args: &[&str]) {
        let out_path = self.dir.path().join(format!("{program}.out"));
        let out = File::create(&out_path).unwrap();
        let status = self
            .command(program)
            .args(args)
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        assert!(
            status.success(),
            "{program} {args:?} failed ({status}):\n{}\nserver log:\n{}",
            std::fs::read_to_string(&out_path).unwrap_or_default(),
            self.log()
        );
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Before the temp dir goes; errors ignored (a panicking test may have left it half-started).
        if self.running {
            let _ = self
                .command("pg_ctl")
                .args(["-D", &self.data(), "-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The server programs of the newest PostgreSQL Debian installed: /usr/lib/postgresql/MAJOR/bin.
fn debian_bin() -> Option<PathBuf> {
    std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version: Vec<u32> = e
                .file_name()
                .to_str()?
                .split('.')
                .map(|n| n.parse().ok())
                .collect::<Option<_>>()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max()
        .map(|(_, bin)| bin)
}

/// Whether we run as root (effective uid 0), when PostgreSQL's programs refuse to.
fn is_root() -> bool {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status")
        && let Some(uids) = status.lines().find_map(|l| l.strip_prefix("Uid:"))
    {
        return uids.split_whitespace().nth(1) == Some("0");
    }
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// util-linux's `runuser` (in sbin, which a test's PATH may lack).
fn runuser() -> PathBuf {
    ["/usr/sbin/runuser", "/sbin/runuser"]
        .map(PathBuf::from)
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("runuser"))
}

/// An HAProxy in front of some daemons: HTTP, round robin over the ones whose `/ready` answers 200
/// (checked every 500 ms: down after 2 failures, up after 1 success). Dropping it kills it.
pub(crate) struct Haproxy {
    /// The frontend clients connect to, on 127.0.0.1.
    pub(crate) addr: SocketAddr,
    /// HAProxy's own statistics page (`/stats;csv`): each server's state and last check.
    stats: SocketAddr,
    child: Child,
    /// `haproxy.cfg` and `haproxy.log`.
    dir: tempfile::TempDir,
}

impl Haproxy {
    /// Start one on a free loopback port in front of `backends` (servers `d0`, `d1`, … in that
    /// order, as the log names them), or `None` (SKIPPED) when HAProxy is not installed. With
    /// `sticky`, a request carrying an `Mcp-Session-Id` goes to the daemon that handed that id out
    /// (while it is up); without, every request is balanced on its own. Returns once the frontend
    /// accepts connections; the backends may not be checked up yet.
    pub(crate) fn start(test: &str, backends: &[SocketAddr], sticky: bool) -> Option<Haproxy> {
        let bin = service("haproxy", test)?;
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let stats = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let dir = tempfile::Builder::new()
            .prefix("toolhost-haproxy-")
            .tempdir()
            .unwrap();
        let cfg = dir.path().join("haproxy.cfg");
        let text = haproxy_config(addr, stats, backends, sticky);
        std::fs::write(&cfg, &text).unwrap();
        let check = Command::new(&bin)
            .arg("-c")
            .arg("-f")
            .arg(&cfg)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{test}: haproxy -c rejects the config ({}):\n{}{}\n{text}",
            check.status,
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let log = File::create(dir.path().join("haproxy.log")).unwrap();
        // -db: in the foreground, not a daemon, so the child is HAProxy itself and kill stops it.
        let child = Command::new(&bin)
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut proxy = Haproxy {
            addr,
            stats,
            child,
            dir,
        };
        let started = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            if let Some(status) = proxy.child.try_wait().unwrap() {
                panic!(
                    "{test}: haproxy exited ({status}) before listening on {addr}:\n{}",
                    proxy.log()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{test}: haproxy is not listening on {addr} after 10 s:\n{}",
                proxy.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(proxy)
    }

    /// Wait (up to [`EVENT_WAIT`]) until a health check has passed for every backend and HAProxy
    /// counts them all up: from then on, requests are balanced over all of them.
    #[track_caller]
    pub(crate) fn wait_until_all_up(&self) {
        let up = || {
            let csv = crate::daemon::http(self.stats, "GET", "/stats;csv", &[], b"").text();
            let mut lines = csv.lines();
            let header: Vec<&str> = lines.next()?.trim_start_matches("# ").split(',').collect();
            let field = |name: &str| header.iter().position(|h| *h == name);
            let (px, sv, status, check) = (
                field("pxname")?,
                field("svname")?,
                field("status")?,
                field("check_status")?,
            );
            let servers: Vec<Vec<&str>> = lines
                .map(|l| l.split(',').collect::<Vec<&str>>())
                .filter(|f| f.get(px) == Some(&"daemons") && f.get(sv) != Some(&"BACKEND"))
                .collect();
            (!servers.is_empty()
                && servers
                    .iter()
                    .all(|f| f.get(status) == Some(&"UP") && f.get(check) == Some(&"L7OK")))
            .then_some(())
        };
        if poll(EVENT_WAIT, up).is_none() {
            panic!(
                "HAProxy did not check every backend up within {EVENT_WAIT:?}:\n{}\n{}",
                crate::daemon::http(self.stats, "GET", "/stats;csv", &[], b"").text(),
                self.log()
            );
        }
    }

    /// What HAProxy wrote so far: one line per request (`daemons/dN` says which daemon served it),
    /// servers going up and down, warnings. For assertion messages.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("haproxy.log")).unwrap_or_default()
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The config: no chroot, user or daemon mode (a test's child process); the log to stderr.
fn haproxy_config(
    front: SocketAddr,
    stats: SocketAddr,
    backends: &[SocketAddr],
    sticky: bool,
) -> String {
    let mut text = format!(
        "global\n\
         \x20   maxconn 1000\n\
         \x20   log stderr format raw local0 info\n\
         \n\
         defaults\n\
         \x20   mode http\n\
         \x20   log global\n\
         \x20   option httplog\n\
         \x20   option dontlognull\n\
         \x20   timeout connect 2s\n\
         \x20   timeout client 60s\n\
         \x20   timeout server 60s\n\
         \x20   retries 1\n\
         \n\
         frontend mcp\n\
         \x20   bind {front}\n\
         \x20   default_backend daemons\n\
         \n\
         frontend stats\n\
         \x20   bind {stats}\n\
         \x20   stats enable\n\
         \x20   stats uri /stats\n\
         \n\
         backend daemons\n\
         \x20   balance roundrobin\n\
         \x20   option httpchk\n\
         \x20   http-check send meth GET uri /ready ver HTTP/1.1 hdr Host 127.0.0.1\n\
         \x20   http-check expect status 200\n"
    );
    // The daemon refuses a request without a Host (DNS-rebinding guard), hence HTTP/1.1 and a Host
    // in the check. Stickiness: the id a daemon answers with pins the requests that carry it.
    if sticky {
        text.push_str(
            "    stick-table type string len 64 size 10k expire 30m\n\
             \x20   stick on req.hdr(mcp-session-id)\n\
             \x20   stick store-response res.hdr(mcp-session-id)\n",
        );
    }
    for (n, backend) in backends.iter().enumerate() {
        assert!(
            matches!(backend, SocketAddr::V4(a) if a.ip().is_loopback()),
            "backend {backend} is not an IPv4 loopback address"
        );
        text.push_str(&format!(
            "    server d{n} {backend} check inter 500ms fall 2 rise 1\n"
        ));
    }
    text
}
