//! Against fixtures made by openssl (`tests/golden/cosign/make.sh`), not by this code: the test
//! proves toolhost reads what another implementation of cosign's format writes.

use super::*;

const REPO: &str = "127.0.0.1:5000/tools/echo";
const DIGEST: &str = "sha256:4d3c1a7b0f2e9c8d6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f";

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/golden/cosign")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn key(name: &str) -> PublicKey {
    PublicKey::from_pem(name, &fixture(name)).unwrap()
}

fn signature() -> String {
    String::from_utf8(fixture("payload.sig")).unwrap()
}

const SUBJECT: Subject<'static> = Subject {
    digest: DIGEST,
    repository: REPO,
};

#[test]
fn accepts_a_signature_by_a_trusted_key_for_this_digest_and_repository() {
    let keys = [key("other.pub"), key("trusted.pub")];
    let by = verify(&fixture("payload.json"), &signature(), &keys, SUBJECT).unwrap();
    assert_eq!(by.name(), "trusted.pub");
}

#[test]
fn refuses_another_key_and_an_altered_payload() {
    let other = [key("other.pub")];
    let e = verify(&fixture("payload.json"), &signature(), &other, SUBJECT);
    assert!(matches!(e, Err(SignatureError::WrongKey { ref trusted }) if trusted == "other.pub"));
    let mut altered = fixture("payload.json");
    let at = altered.len() - 3;
    altered[at] ^= 1;
    let trusted = [key("trusted.pub")];
    let e = verify(&altered, &signature(), &trusted, SUBJECT);
    assert!(matches!(e, Err(SignatureError::WrongKey { .. })), "{e:?}");
    let e = verify(&fixture("payload.json"), &signature(), &[], SUBJECT).unwrap_err();
    assert!(e.to_string().contains("trusted: none"), "{e}");
}

#[test]
fn refuses_a_signature_for_another_digest_or_repository() {
    let keys = [key("trusted.pub")];
    let other_digest = Subject {
        digest: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
        ..SUBJECT
    };
    let e = verify(&fixture("payload.json"), &signature(), &keys, other_digest);
    assert!(matches!(e, Err(SignatureError::WrongDigest { ref signed, .. }) if signed == DIGEST));
    let mirror = Subject {
        repository: "127.0.0.1:5000/mirror/echo",
        ..SUBJECT
    };
    let e = verify(&fixture("payload.json"), &signature(), &keys, mirror);
    assert!(matches!(e, Err(SignatureError::WrongRepository { ref signed, .. }) if signed == REPO));
}

#[test]
fn refuses_garbage_signatures_and_oversized_payloads() {
    let keys = [key("trusted.pub")];
    let e = verify(&fixture("payload.json"), "not base64!", &keys, SUBJECT);
    assert_eq!(e.unwrap_err(), SignatureError::NotBase64);
    let e = verify(&fixture("payload.json"), "AAAA", &keys, SUBJECT);
    assert!(matches!(e, Err(SignatureError::WrongKey { .. })));
    let big = vec![b' '; MAX_PAYLOAD_BYTES + 1];
    let e = verify(&big, &signature(), &keys, SUBJECT);
    assert_eq!(
        e.unwrap_err(),
        SignatureError::TooLarge(MAX_PAYLOAD_BYTES + 1)
    );
}

#[test]
fn accepts_only_p256_public_keys() {
    assert!(matches!(
        PublicKey::from_pem("rsa.pub", &fixture("rsa.pub")),
        Err(KeyError::NotP256 { .. })
    ));
    assert!(matches!(
        PublicKey::from_pem("x", b"not a key"),
        Err(KeyError::NotPem { .. })
    ));
    assert!(format!("{:?}", key("trusted.pub")).contains("trusted.pub"));
}

#[test]
fn names_the_signature_tag_of_a_digest() {
    assert_eq!(
        signature_tag(DIGEST).as_deref(),
        Some("sha256-4d3c1a7b0f2e9c8d6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f.sig")
    );
    assert_eq!(signature_tag("sha256:abc"), None);
    assert_eq!(signature_tag("md5:00"), None);
}

#[test]
fn signs_what_it_verifies_in_the_payload_format_openssl_was_given() {
    // The fixture payload was written by make.sh's printf: ours must be the same bytes.
    assert_eq!(payload(SUBJECT), fixture("payload.json"));
    let pem = b"-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgevZzL1gdAFr88hb2\nOF/2NxApJCzGCEDdfSp6VjO30hihRANCAAQRWz+jn65BtOMvdyHKcvjBeBSDZH2r\n1RTwjQYDVR0PAQH/BAQDAgKEMB0GA1UdJQQWMBQGCCsGAQUFBwMBBggrBgEFBQcD\n-----END PRIVATE KEY-----\n";
    // Not a valid P-256 pair: refused with the reason, never a panic.
    assert!(SigningKey::from_pem("bad.key", pem).is_err());
    assert!(matches!(
        SigningKey::from_pem("pub.pem", &fixture("trusted.pub")),
        Err(KeyError::NotPrivate { .. })
    ));
    let signer = SigningKey::from_pem("signer.key", &fixture("signer.key")).unwrap();
    let signed = payload(SUBJECT);
    let signature = signer.sign(&signed);
    let keys = [key("trusted.pub"), key("signer.pub")];
    assert_eq!(
        verify(&signed, &signature, &keys, SUBJECT).unwrap().name(),
        "signer.pub"
    );
}

/// Sigstore bundles (made by Sigstore, from its conformance suite, over `a.txt`) judged by a
/// `[trust]` entry's keyless signer: a message signature over the digest is a signature; a DSSE
/// envelope attesting SLSA provenance names the artifact too, but is no signature of it.
#[test]
fn a_sigstore_bundle_is_judged_by_the_entry_s_keyless_signer() {
    use std::sync::Arc;
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/sigstore");
    let read = |p: &str| std::fs::read(dir.join(p)).unwrap();
    let root =
        Arc::new(sigstore::TrustedRoot::from_json(&read("trusted_root.production.json")).unwrap());
    let signature = read("conformance/happy-path-v0.3/bundle.sigstore.json");
    let provenance = read("conformance/happy-path-intoto-in-dsse-v3/bundle.sigstore.json");
    let digest = format!("sha256:{}", sha256_hex(&read("conformance/a.txt")));
    let subject = Subject {
        digest: &digest,
        repository: REPO,
    };
    let entry = |identity: &str, root: Option<Arc<sigstore::TrustedRoot>>| {
        TrustPolicy::new(vec![TrustEntry {
            prefix: "127.0.0.1:5000".into(),
            keys: vec![],
            keyless: Some(
                Keyless::new(identity, "https://token.actions.githubusercontent.com").unwrap(),
            ),
            root,
            require_signature: true,
        }])
    };
    const NOW: u64 = 1_800_000_000;
    let glob = "https://github.com/sigstore-conformance/*/.github/workflows/*.yml@refs/heads/main";
    let policy = entry(glob, Some(root.clone()));
    let (status, chosen) = policy
        .requirement(REPO)
        .judge(
            subject,
            [Evidence::Bundle(b"{}"), Evidence::Bundle(&signature)],
            NOW,
        )
        .unwrap();
    assert_eq!(chosen, Some(1));
    assert!(
        matches!(&status, SignatureStatus::Sigstore(by)
            if by.signer.starts_with("https://github.com/sigstore-conformance/")
                && by.issuer.is_some() && by.bundle.starts_with("sha256:")),
        "{status:?}"
    );
    let e = policy
        .requirement(REPO)
        .judge(subject, [Evidence::Bundle(&provenance)], NOW)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("attestation of https://slsa.dev/provenance/v1, not a signature"),
        "{e}"
    );

    // Another identity: refused, naming whom the bundle was signed by.
    let policy = entry("https://github.com/someone/else/*", Some(root.clone()));
    let e = policy
        .requirement(REPO)
        .judge(subject, [Evidence::Bundle(&signature)], NOW)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("signed by https://github.com/sigstore-conformance/"),
        "{e}"
    );
    // Another artifact.
    let other = format!("sha256:{}", "0".repeat(64));
    let policy = entry(glob, Some(root));
    let e = policy
        .requirement(REPO)
        .judge(
            Subject {
                digest: &other,
                repository: REPO,
            },
            [Evidence::Bundle(&signature)],
            NOW,
        )
        .unwrap_err();
    assert!(e.to_string().contains("signs another artifact"), "{e}");
    // No trusted root configured: the refusal says what to set.
    let policy = entry(glob, None);
    let e = policy
        .requirement(REPO)
        .judge(subject, [Evidence::Bundle(&signature)], NOW)
        .unwrap_err();
    assert!(e.to_string().contains("trusted-root"), "{e}");
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A keyless identity glob names path segments: `*` stops at `/`, so a branch whose name repeats
/// the release workflow's path cannot pass for it; `**` crosses segments. An exact identity is
/// compared as text (a backslash in it escapes nothing), and empty ones are refused.
#[test]
fn keyless_identities_match_segment_by_segment_and_exactly() {
    let issuer = "https://token.actions.githubusercontent.com";
    let release = Keyless::new(
        "https://github.com/org/*/.github/workflows/release.yml@refs/tags/*",
        issuer,
    )
    .unwrap();
    assert!(
        release
            .matches("https://github.com/org/tools/.github/workflows/release.yml@refs/tags/v1.2")
    );
    // Any workflow of any repository of the org, on a branch named to end like the release path.
    assert!(!release.matches(
        "https://github.com/org/tools/.github/workflows/evil.yml@refs/heads/x/.github/workflows/release.yml@refs/tags/v1"
    ));
    assert!(
        !release.matches("https://github.com/org/a/b/.github/workflows/release.yml@refs/tags/v1")
    );
    let org = Keyless::new("https://github.com/org/**", issuer).unwrap();
    assert!(org.matches("https://github.com/org/tools/.github/workflows/x.yml@refs/heads/main"));
    assert!(!org.matches("https://github.com/other/tools/.github/workflows/x.yml@refs/heads/main"));

    let exact = Keyless::new(r"ci\bot@example.com", issuer).unwrap();
    assert!(exact.matches(r"ci\bot@example.com"));
    assert!(!exact.matches("cibot@example.com"));
    assert!(Keyless::new("", issuer).is_err());
    assert!(Keyless::new("a@b.c", " ").is_err());
}
