//! Sigstore bundles end to end: attached as cosign 3 attaches them (an OCI referrer, found through
//! the referrers tag scheme on a registry without the referrers API), judged by keyless `[trust]`
//! entries. The bundles come from other implementations: Sigstore's conformance suite, and
//! sigstore-python signing at test time against a Fulcio and Rekor on loopback whose root, log keys
//! and certificates openssl and Python's `cryptography` make (tests/e2e/oci/sigstore/sign.py).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::registry::TestRegistry;
use super::{insecure, list_json, push, text, tools};
use crate::harness::{Env, root};

/// The OIDC issuer the test Fulcio writes into certificates.
const ISSUER: &str = "https://token.issuer.test";
/// A release workflow's identity, as GitHub's issuer names one.
const WORKFLOW: &str = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1";

/// sigstore-python (`.venv-sigstore`, installed by scripts/test.sh) and the test authority it signs
/// against, made once in a temporary directory.
struct Signer {
    python: PathBuf,
    dir: tempfile::TempDir,
}

impl Signer {
    /// The signer, or `None` after printing SKIPPED (failing with TOOLHOST_REQUIRE_SERVICES set).
    fn new(test: &str) -> Option<Self> {
        let python = root().join(".venv-sigstore/bin/python");
        let ready = python.is_file()
            && Command::new(&python)
                .args(["-c", "import sigstore.sign"])
                .output()
                .is_ok_and(|o| o.status.success());
        if !ready {
            let why = "sigstore-python needs .venv-sigstore (scripts/test.sh installs it)";
            assert!(
                std::env::var_os("TOOLHOST_REQUIRE_SERVICES").is_none(),
                "{test}: TOOLHOST_REQUIRE_SERVICES is set, but {why}"
            );
            eprintln!("SKIPPED {test}: {why}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        Some(Self { python, dir })
    }

    /// Signs `artifact` for `identity` and [`ISSUER`] with `extra` options of sign.py; the bundle's
    /// path. sign.py fails unless sigstore-python verifies the bundle (or refuses it, for
    /// `--log-late`).
    fn sign(&self, name: &str, artifact: &[u8], identity: &str, extra: &[&str]) -> PathBuf {
        let file = self.dir.path().join(format!("{name}.artifact"));
        std::fs::write(&file, artifact).unwrap();
        let bundle = self.dir.path().join(format!("{name}.sigstore.json"));
        let out = Command::new(&self.python)
            .arg(root().join("tests/e2e/oci/sigstore/sign.py"))
            .arg(self.dir.path().join("authority"))
            .args([&file, &bundle])
            .args(["--identity", identity, "--issuer", ISSUER])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "sign.py {name}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        bundle
    }

    /// The test authority's `trusted_root.json` (made by the first signing).
    fn trusted_root(&self) -> PathBuf {
        self.dir.path().join("authority/trusted_root.json")
    }
}

/// The manifest's bytes as the registry serves them: what a signature over its digest signs.
fn manifest(addr: &str, repo: &str, digest: &str) -> Vec<u8> {
    let out = Command::new("curl")
        .args([
            "-fsS",
            "-H",
            "Accept: application/vnd.oci.image.manifest.v1+json",
            &format!("http://{addr}/v2/{repo}/manifests/{digest}"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "curl: {}", text(&out));
    out.stdout
}

/// A `[trust]` entry for `prefix` that takes `identity` through `issuer` under `root`.
fn keyless(prefix: &str, identity: &str, issuer: &str, root: &Path) -> String {
    format!(
        "[trust.\"{prefix}\"]\nidentity = \"{identity}\"\nissuer = \"{issuer}\"\ntrusted-root = '{}'\n",
        root.display()
    )
}

/// The line `pull` printed for the plugin `name`, which must say `needle`.
fn refusal<'a>(said: &'a str, name: &str, needle: &str) -> &'a str {
    let line = said
        .lines()
        .find(|l| l.starts_with(&format!("{name} not pulled")))
        .unwrap_or_else(|| panic!("no line for {name}:\n{said}"));
    assert!(line.contains(needle), "{name}: {line}");
    line
}

/// Signed keylessly by sigstore-python in a workflow, attached as a referrer: pulled, its bundle,
/// identity and issuer locked, and served offline, also after the certificate expired (it was
/// valid when the log recorded the signature, which is what counts).
#[test]
fn a_keyless_bundle_from_sigstore_python_is_pulled_locked_and_served_offline() {
    let test = "a_keyless_bundle_…_served_offline";
    let (Some(reg), Some(signer)) = (TestRegistry::start(test, false), Signer::new(test)) else {
        return;
    };
    let addr = &reg.addr.clone();
    let publisher = Env::new(&[], &insecure(addr));
    let digest = push(&publisher, "echo", &format!("oci://{addr}/acme/echo:1"));
    let lifetime = 20;
    let signed_at = Instant::now();
    let bundle = signer.sign(
        "echo",
        &manifest(addr, "acme/echo", &digest),
        WORKFLOW,
        &["--lifetime", &lifetime.to_string()],
    );
    reg.attach_bundle("acme/echo", &digest, &bundle, None);

    let config = format!(
        "{}{}[plugins.echo]\nsource = \"oci://{addr}/acme/echo:1\"\n",
        insecure(addr),
        keyless(
            &format!("{addr}/acme"),
            "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/*",
            ISSUER,
            &signer.trusted_root()
        ),
    );
    let env = Env::new(&[], &config);
    let out = env.run(&["pull"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lock: toml::Value =
        toml::from_str(&std::fs::read_to_string(env.path().join("toolhost.lock")).unwrap())
            .unwrap();
    let locked = &lock["plugin"]["echo"]["bundle"];
    let bundle_digest =
        toolhost_trust::source::Digest::of(&std::fs::read(&bundle).unwrap()).to_string();
    assert_eq!(
        locked["digest"].as_str(),
        Some(bundle_digest.as_str()),
        "{lock}"
    );
    assert_eq!(locked["signer"].as_str(), Some(WORKFLOW), "{lock}");
    assert_eq!(locked["issuer"].as_str(), Some(ISSUER), "{lock}");

    // Offline: the registry is gone; the store, the lock and the trusted root serve, and the bundle
    // is verified again on load.
    drop(reg);
    let served = |when: &str| {
        let listed = list_json(&env);
        assert!(
            tools(&listed).contains(&"echo".to_string()),
            "{when}: {listed}"
        );
        let signature = &listed["plugins"]["echo"]["provenance"]["signature"];
        assert_eq!(signature["status"], "sigstore", "{when}: {listed}");
        assert_eq!(signature["signer"], WORKFLOW, "{when}: {listed}");
        assert_eq!(signature["issuer"], ISSUER, "{when}: {listed}");
        assert_eq!(signature["bundle"], Value::from(bundle_digest.as_str()));
        env.call("echo", json!({"text": when})).assert_ok();
    };
    served("before the certificate expired");
    let expired = Duration::from_secs(lifetime + 2);
    std::thread::sleep(expired.saturating_sub(signed_at.elapsed()));
    served("after the certificate expired");

    // The trust entry now names another workflow: the locked bundle is judged again on load,
    // offline, and the plugin is refused, saying by whom it was signed.
    let path = env.path().join("toolhost.toml");
    let narrowed = std::fs::read_to_string(&path)
        .unwrap()
        .replace("release.yml@refs/tags/*", "nightly.yml@refs/heads/main");
    std::fs::write(&path, narrowed).unwrap();
    let listed = list_json(&env);
    assert!(!tools(&listed).contains(&"echo".to_string()), "{listed}");
    let reason = listed["plugins"]["echo"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains(&format!("signed by {WORKFLOW}")),
        "{listed}"
    );
}

/// A copy of the trusted root at `path` whose certificate authorities are Sigstore's production
/// ones instead: the same logs, authorities that never issued the test certificates.
fn foreign_authorities(path: &Path) -> PathBuf {
    let production = root().join("tests/fixtures/sigstore/trusted_root.production.json");
    let read = |p: &Path| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let mut ours = read(path);
    ours["certificateAuthorities"] = read(&production)["certificateAuthorities"].clone();
    let out = path.with_file_name("foreign_root.json");
    std::fs::write(&out, serde_json::to_vec(&ours).unwrap()).unwrap();
    out
}

/// Bundles sigstore-python made against the test authority, each refused for the part that fails:
/// another identity, another issuer, a certificate expired when the log recorded the signature, an
/// inclusion proof that does not verify, a signature over another artifact, a root the certificate
/// does not chain to. Nothing is locked or loaded.
#[test]
fn sigstore_python_bundles_are_refused_for_the_part_that_fails() {
    let test = "sigstore_python_bundles_are_refused_…";
    let (Some(reg), Some(signer)) = (TestRegistry::start(test, false), Signer::new(test)) else {
        return;
    };
    let addr = &reg.addr.clone();
    let publisher = Env::new(&[], &insecure(addr));
    let root = signer.trusted_root();
    let mut config = insecure(addr);
    let cases: [(&str, &str, &[&str], &str); 6] = [
        // Logged a second after its certificate (of 15 s) expired: signed first, pulled once that time is past.
        (
            "late",
            WORKFLOW,
            &["--lifetime", "15", "--log-late", "1"],
            "Sigstore bundle: certificate: the certificate was not valid when the log recorded",
        ),
        (
            "identity",
            "https://github.com/someone/else/*",
            &[],
            "Sigstore bundle: signed by https://github.com/acme/",
        ),
        (
            "issuer",
            WORKFLOW,
            &[],
            "signed through the issuer https://token.issuer.test, not https://token.actions.githubusercontent.com",
        ),
        (
            "proof",
            WORKFLOW,
            &[],
            "Sigstore bundle: transparency log: the inclusion proof does not lead to the log's root hash",
        ),
        (
            "digest",
            WORKFLOW,
            &[],
            "Sigstore bundle: the bundle signs another artifact",
        ),
        (
            "root",
            WORKFLOW,
            &[],
            "Sigstore bundle: certificate: the certificate does not chain to a certificate authority of the trusted root",
        ),
    ];
    let mut logged = Instant::now();
    for (name, identity, extra, _) in cases {
        let repo = format!("refused/{name}");
        let digest = push(&publisher, "echo", &format!("oci://{addr}/{repo}:1"));
        let signed = match name {
            "digest" => b"another artifact".to_vec(),
            _ => manifest(addr, &repo, &digest),
        };
        let bundle = signer.sign(name, &signed, WORKFLOW, extra);
        if name == "late" {
            logged = Instant::now() + Duration::from_secs(17);
        }
        if name == "proof" {
            // One hash of the audit path changed: the proof leads to another root than the
            // checkpoint's (the signed entry timestamp still verifies).
            let mut b: Value = serde_json::from_slice(&std::fs::read(&bundle).unwrap()).unwrap();
            let hash =
                &mut b["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"][0];
            let old = hash.as_str().unwrap().to_string();
            let first = if old.starts_with('A') { "B" } else { "A" };
            *hash = json!(format!("{first}{}", &old[1..]));
            std::fs::write(&bundle, serde_json::to_vec(&b).unwrap()).unwrap();
        }
        reg.attach_bundle(&repo, &digest, &bundle, None);
        let issuer = match name {
            "issuer" => "https://token.actions.githubusercontent.com",
            _ => ISSUER,
        };
        let trusted = if name == "root" {
            foreign_authorities(&root)
        } else {
            root.clone()
        };
        config.push_str(&keyless(
            &format!("{addr}/{repo}"),
            identity,
            issuer,
            &trusted,
        ));
        config.push_str(&format!(
            "[plugins.{name}]\nsource = \"oci://{addr}/{repo}:1\"\nprefix = \"{name}_\"\n"
        ));
    }
    let env = Env::new(&[], &config);
    std::thread::sleep(logged.saturating_duration_since(Instant::now()));
    let out = env.run(&["pull"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    for (name, _, _, needle) in cases {
        eprintln!("{}", refusal(&said, name, needle));
    }
    let lock = std::fs::read_to_string(env.path().join("toolhost.lock")).unwrap_or_default();
    assert!(!lock.contains("refused/"), "{lock}");
    let listed = list_json(&env);
    assert!(tools(&listed).is_empty(), "{listed}");
}

/// Bundles from Sigstore's conformance suite (a signature over another artifact), listed in the tag
/// scheme's index as cosign 3.1 lists a bundle and as cosign 3.0 did, are found and judged by a
/// keyless `[trust]` entry under Sigstore's production root: every pull is refused, each for the
/// part that fails; nothing is locked or loaded.
#[test]
fn sigstore_bundles_attached_as_referrers_are_found_and_judged() {
    let Some(reg) = TestRegistry::start("sigstore_bundles_…", false) else {
        return;
    };
    let addr = &reg.addr.clone();
    let publisher = Env::new(&[], &insecure(addr));
    let fixtures = root().join("tests/fixtures/sigstore");
    let bundle = fixtures.join("conformance/happy-path-v0.3/bundle.sigstore.json");
    for (repo, index_type) in [
        ("other", None),
        ("stranger", Some("application/vnd.oci.empty.v1+json")),
        ("unsigned", None),
    ] {
        let digest = push(
            &publisher,
            "echo",
            &format!("oci://{addr}/bundled/{repo}:1"),
        );
        if repo != "unsigned" {
            reg.attach_bundle(&format!("bundled/{repo}"), &digest, &bundle, index_type);
        }
    }
    let production = fixtures.join("trusted_root.production.json");
    let github = "https://token.actions.githubusercontent.com";
    let mut config = insecure(addr);
    for (repo, identity) in [
        ("other", "https://github.com/sigstore-conformance/**"),
        ("stranger", "https://github.com/someone/else/*"),
        ("unsigned", "https://github.com/sigstore-conformance/**"),
    ] {
        config.push_str(&keyless(
            &format!("{addr}/bundled/{repo}"),
            identity,
            github,
            &production,
        ));
        config.push_str(&format!(
            "[plugins.{repo}]\nsource = \"oci://{addr}/bundled/{repo}:1\"\nprefix = \"{repo}_\"\n"
        ));
    }
    let env = Env::new(&[], &config);
    let out = env.run(&["pull"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    refusal(
        &said,
        "other",
        "Sigstore bundle: the bundle signs another artifact: its digest is not sha256:",
    );
    refusal(
        &said,
        "stranger",
        "Sigstore bundle: signed by https://github.com/sigstore-conformance/",
    );
    refusal(&said, "unsigned", "is not signed");
    let listed = list_json(&env);
    assert!(tools(&listed).is_empty(), "{listed}");
}
