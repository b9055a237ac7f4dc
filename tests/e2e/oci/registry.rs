//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF distribution server),
//! started on a free loopback port with its own storage, optionally behind htpasswd, stopped on drop.
//! Missing, the tests print SKIPPED, or fail when TOOLHOST_REQUIRE_SERVICES is set (as in CI, whose
//! scripts install it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The user and password of the registry started `with_auth` (its htpasswd holds their bcrypt hash).
pub(crate) const USER: &str = "alice";
pub(crate) const PASSWORD: &str = "s3cret";
const HTPASSWD: &str = "alice:$2b$12$XuEZuvPHNT8vd8aGBMFgNOm7UXT2QZGNg6sQdLsA8UED76sME8OmW\n";

pub(crate) struct TestRegistry {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub(crate) addr: String,
    dir: tempfile::TempDir,
}

impl TestRegistry {
    /// A fresh registry, or `None` (having said why) when `docker-registry` is not installed.
    pub(crate) fn start(test: &str, with_auth: bool) -> Option<Self> {
        let bin = crate::harness::service("docker-registry", test)?;
        let dir = tempfile::tempdir().unwrap();
        let auth = if with_auth {
            std::fs::write(dir.path().join("htpasswd"), HTPASSWD).unwrap();
            format!(
                "auth:\n  htpasswd:\n    realm: toolhost-test\n    path: {}\n",
                dir.path().join("htpasswd").display()
            )
        } else {
            String::new()
        };
        let config = format!(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    \
             rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:0\n{auth}",
            dir.path().join("data").display()
        );
        std::fs::write(dir.path().join("config.yml"), config).unwrap();
        let mut child = Command::new(bin)
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // It logs the port it bound; the reader keeps draining its log so it never blocks.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("listening on ") {
                    let addr = line[at + 13..]
                        .split(|c: char| c == '"' || c.is_whitespace())
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    let _ = tx.send(addr);
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("docker-registry did not say where it listens");
        assert!(addr.starts_with("127.0.0.1:"), "{addr}");
        Some(Self { child, addr, dir })
    }

    /// The file holding blob `digest` in the registry's storage.
    pub(crate) fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// Sign `digest` of `repo` with openssl and push it with curl (tests/e2e/oci/cosign-sign.sh);
    /// `signed` overrides what the payload names (repository, digest).
    pub(crate) fn cosign_sign(
        &self,
        repo: &str,
        digest: &str,
        key: &Path,
        signed: Option<(&str, &str)>,
        auth: bool,
    ) {
        let script = crate::harness::root().join("tests/e2e/oci/cosign-sign.sh");
        let mut c = Command::new("bash");
        c.arg(script).args([&self.addr, repo, digest]).arg(key);
        if let Some((r, d)) = signed {
            c.args([r, d]);
        }
        if auth {
            c.env("REGISTRY_AUTH", format!("{USER}:{PASSWORD}"));
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "cosign-sign.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl TestRegistry {
    /// Attach `bundle` to `digest` of `repo` as cosign 3 does, with curl (tests/e2e/oci/attach-bundle.sh);
    /// `index_type` is the artifact type of the tag scheme's index entry (cosign 3.0 wrote the empty one).
    pub(crate) fn attach_bundle(
        &self,
        repo: &str,
        digest: &str,
        bundle: &Path,
        index_type: Option<&str>,
    ) {
        let script = crate::harness::root().join("tests/e2e/oci/attach-bundle.sh");
        let out = Command::new("bash")
            .arg(script)
            .args([&self.addr, repo, digest])
            .arg(bundle)
            .args(index_type)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "attach-bundle.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh ECDSA P-256 key pair made by openssl in `dir`: (private PEM, public PEM).
pub(crate) fn openssl_key_pair(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let ec = run(&["ecparam", "-name", "prime256v1", "-genkey", "-noout"]);
    let ec_file = dir.join(format!("{name}.ec"));
    std::fs::write(&ec_file, ec).unwrap();
    run(&[
        "pkcs8",
        "-topk8",
        "-nocrypt",
        "-in",
        ec_file.to_str().unwrap(),
        "-out",
        key.to_str().unwrap(),
    ]);
    run(&[
        "pkey",
        "-in",
        key.to_str().unwrap(),
        "-pubout",
        "-out",
        public.to_str().unwrap(),
    ]);
    (key, public)
}
