//! The Sigstore client conformance suite's bundle cases (`tests/fixtures/sigstore/`, made by Sigstore):
//! each verifies or is refused as the suite says, for the reason it gives.

use std::path::{Path, PathBuf};

use super::*;

/// The suite's defaults, when a case names no identity or issuer of its own.
const IDENTITY: &str = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
const ISSUER: &str = "https://token.actions.githubusercontent.com";
/// When the suite's bundles are judged: after all of them were made.
const NOW: u64 = 1_800_000_000;

/// Cases this verifier refuses though the suite expects them to pass, and why.
const UNSUPPORTED: &[(&str, &str)] = &[];

/// Cases this verifier accepts though the suite expects them to fail, and why (what it does not check).
const UNCHECKED: &[(&str, &str)] = &[];

/// A Rekor v2 entry has no integrated time: its RFC 3161 timestamp dates the signature, and that
/// time is what the verdict reports.
#[test]
fn a_rekor_v2_entry_is_dated_by_its_timestamp() {
    let ok = run(&fixtures().join("conformance/rekor2-happy-path")).unwrap();
    // `openssl ts -reply -text` on its timestamp: Jun 12 12:02:20 2025 GMT.
    assert_eq!(ok.integrated_time, 1_749_729_740);
    assert_eq!(ok.log_index, 735);
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sigstore")
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Verify one case's bundle as the suite would.
fn run(dir: &Path) -> Result<Verified, SigstoreError> {
    let root_file = dir.join("trusted_root.json");
    let root = if root_file.is_file() {
        read(&root_file)
    } else {
        read(&fixtures().join("trusted_root.production.json"))
    };
    let root = TrustedRoot::from_json(&root)?;
    let artifact = match dir.join("artifact") {
        p if p.is_file() => read(&p),
        _ => read(&dir.join("../a.txt")),
    };
    let digest = hash(&[&artifact]);
    let bundle = Bundle::from_json(&read(&dir.join("bundle.sigstore.json")))?;
    let text = |name: &str, default: &str| {
        std::fs::read_to_string(dir.join(name)).map_or(default.to_owned(), |s| s.trim().to_owned())
    };
    let key_file = dir.join("key.pub");
    if key_file.is_file() {
        let key = PublicKey::from_pem("key.pub", &read(&key_file)).unwrap();
        return verify(&bundle, &root, &digest, Signer::Key(&key), NOW);
    }
    let (identity, issuer) = (text("identity", IDENTITY), text("issuer", ISSUER));
    let matches = |s: &str| s == identity;
    let signer = Signer::Identity {
        identity: &matches,
        shown: &identity,
        issuer: &issuer,
    };
    verify(&bundle, &root, &digest, signer, NOW)
}

#[test]
fn the_conformance_suite_s_bundle_cases() {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures().join("conformance"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 40, "{} cases", dirs.len());
    let mut wrong = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let expect_ok = !name.ends_with("_fail");
        let got = run(dir);
        let known = UNSUPPORTED.iter().chain(UNCHECKED).any(|(n, _)| *n == name);
        if got.is_ok() != expect_ok && !known {
            wrong.push(format!("{name}: {got:?}"));
        }
        if got.is_ok() == expect_ok && known {
            wrong.push(format!(
                "{name}: listed as a known gap but now judged right: {got:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Each refusal names the part that failed.
#[test]
fn refusals_name_what_failed() {
    let case = |name: &str| run(&fixtures().join("conformance").join(name));
    type Expect = fn(&SigstoreError) -> bool;
    let cases: &[(&str, Expect)] = &[
        (
            "inclusion-proof-corrupted-hash_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("inclusion proof")),
        ),
        (
            "invalid-checkpoint-signature_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("checkpoint")),
        ),
        (
            "checkpoint-wrong-roothash_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("checkpoint")),
        ),
        (
            "set-invalid-signature_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("signed entry timestamp")),
        ),
        ("intoto-expired-certificate_fail", |e| {
            matches!(e, SigstoreError::Certificate(_))
        }),
        (
            "bundle-from-wrong-instance_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("does not name")),
        ),
        ("wrong-material_fail", |e| {
            matches!(e, SigstoreError::Artifact(_))
        }),
        ("signature-mismatch_fail", |e| {
            matches!(e, SigstoreError::Log(_) | SigstoreError::Signature(_))
        }),
        ("managed-key-wrong-key_fail", |e| {
            matches!(e, SigstoreError::Identity { .. })
        }),
        (
            "bundle-with-root-cert_fail",
            |e| matches!(e, SigstoreError::Certificate(m) if m.contains("root")),
        ),
        (
            "rekor2-no-timestamp_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("nothing dates")),
        ),
        (
            "rekor2-timestamp-payload-mismatch_fail",
            |e| matches!(e, SigstoreError::Timestamp(m) if m.contains("something else")),
        ),
        (
            "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail",
            |e| matches!(e, SigstoreError::Timestamp(_)),
        ),
        (
            "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail",
            |e| matches!(e, SigstoreError::Timestamp(_)),
        ),
        (
            "rekor2-timestamp-outside-trust-root-tsa-validity_fail",
            |e| matches!(e, SigstoreError::Timestamp(_)),
        ),
        (
            "rekor2-timestamp-outside-tsa-cert-validity_fail",
            |e| matches!(e, SigstoreError::Timestamp(m) if m.contains("not valid")),
        ),
        ("rekor2-timestamp-with-incorrect-time_fail", |e| {
            matches!(e, SigstoreError::Certificate(_))
        }),
        ("intoto-tsa-timestamp-outside-cert-validity_fail", |e| {
            matches!(e, SigstoreError::Certificate(_))
        }),
        (
            "rekor2-checkpoint-no-matching-signature_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("under its name")),
        ),
        (
            "rekor2-no-inclusion-proof_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("no inclusion proof")),
        ),
        (
            "invalid-ct-key_fail",
            |e| matches!(e, SigstoreError::Certificate(m) if m.contains("certificate transparency")),
        ),
        (
            "rekor2-dsse-mismatch-envelope_fail",
            |e| matches!(e, SigstoreError::Log(m) if m.contains("another envelope")),
        ),
    ];
    for (name, want) in cases {
        let e = case(name).expect_err(name);
        assert!(want(&e), "{name}: {e}");
    }
}

#[test]
fn another_identity_or_issuer_is_refused_by_name() {
    let dir = fixtures().join("conformance/happy-path-v0.3");
    let production = read(&fixtures().join("trusted_root.production.json"));
    let root = TrustedRoot::from_json(&production).unwrap();
    let bundle = Bundle::from_json(&read(&dir.join("bundle.sigstore.json"))).unwrap();
    let digest = hash(&[&read(&fixtures().join("conformance/a.txt"))]);
    // The bundle judged for `identity` through `issuer`, of `artifact`, against `root`, at `now`.
    let judge =
        |identity: &str, issuer: &str, artifact: &[u8; 32], root: &TrustedRoot, now: u64| {
            let matches = |s: &str| s == identity;
            let signer = Signer::Identity {
                identity: &matches,
                shown: identity,
                issuer,
            };
            verify(&bundle, root, artifact, signer, now)
        };
    let ok = judge(IDENTITY, ISSUER, &digest, &root, NOW).unwrap();
    assert_eq!(ok.signer, IDENTITY);
    assert_eq!(ok.issuer.as_deref(), Some(ISSUER));

    let other = "https://github.com/someone/else/.github/workflows/x.yml@refs/heads/main";
    let e = judge(other, ISSUER, &digest, &root, NOW).unwrap_err();
    assert!(
        matches!(&e, SigstoreError::Identity { found, .. } if found == IDENTITY),
        "{e}"
    );
    let e = judge(IDENTITY, "https://accounts.google.com", &digest, &root, NOW).unwrap_err();
    assert!(
        matches!(&e, SigstoreError::Issuer { found, .. } if found == ISSUER),
        "{e}"
    );
    let e = judge(IDENTITY, ISSUER, &hash(&[b"another artifact"]), &root, NOW).unwrap_err();
    assert!(matches!(e, SigstoreError::Artifact(_)), "{e}");
    // Judged before the log recorded it: the entry is from the future.
    let e = judge(IDENTITY, ISSUER, &digest, &root, 1_600_000_000).unwrap_err();
    assert!(
        matches!(&e, SigstoreError::Log(m) if m.contains("future")),
        "{e}"
    );
    // A root whose authorities do not include the one that issued the certificate.
    let mut json: serde_json::Value = serde_json::from_slice(&production).unwrap();
    json["certificateAuthorities"]
        .as_array_mut()
        .unwrap()
        .retain(|a| a["validFor"]["end"].is_string());
    let partial = TrustedRoot::from_json(json.to_string().as_bytes()).unwrap();
    let e = judge(IDENTITY, ISSUER, &digest, &partial, NOW).unwrap_err();
    assert!(matches!(e, SigstoreError::Certificate(_)), "{e}");
}

/// A bundle whose log entry carries neither the log's signed entry timestamp nor an inclusion
/// proof has no word of the log at all, whatever else dates it: a v0.1 bundle (whose proof is
/// optional) with a Rekor v2 entry and a valid timestamp is refused, as is the same entry without
/// its proof in a v0.3 bundle.
#[test]
fn an_entry_without_any_word_of_the_log_is_refused() {
    let dir = fixtures().join("conformance/rekor2-happy-path");
    let root = TrustedRoot::from_json(&read(&dir.join("trusted_root.json"))).unwrap();
    let digest = hash(&[&read(&fixtures().join("conformance/a.txt"))]);
    let original: serde_json::Value =
        serde_json::from_slice(&read(&dir.join("bundle.sigstore.json"))).unwrap();
    for media_type in [
        "application/vnd.dev.sigstore.bundle+json;version=0.1",
        "application/vnd.dev.sigstore.bundle.v0.3+json",
    ] {
        let mut json = original.clone();
        json["mediaType"] = media_type.into();
        let entry = &mut json["verificationMaterial"]["tlogEntries"][0];
        entry.as_object_mut().unwrap().remove("inclusionProof");
        let bundle = Bundle::from_json(json.to_string().as_bytes()).unwrap();
        let matches = |s: &str| s == IDENTITY;
        let signer = Signer::Identity {
            identity: &matches,
            shown: IDENTITY,
            issuer: ISSUER,
        };
        let e = verify(&bundle, &root, &digest, signer, NOW).unwrap_err();
        assert!(matches!(e, SigstoreError::Log(_)), "{media_type}: {e}");
    }
}
