//! `toolhost push` and `toolhost sign` against the hostile registry: an upload answered with an
//! endless error body (a claimed 1 GiB, or chunked without end) fails, says where the body was cut,
//! and the registry gets out no more than the socket buffers hold.

use serde_json::json;

use super::hostile::{Flood, HOSTILE_CAP, HostileRegistry};
use super::registry::openssl_key_pair;
use super::{SLACK, insecure, text};
use crate::harness::{Env, plugin_file};

/// What the error answer's message must say: the status, and that its body was cut at 4 KiB.
fn assert_cut_off(flood: Flood, reg: &HostileRegistry, out: &std::process::Output) {
    let said = text(out);
    assert_eq!(out.status.code(), Some(3), "{flood:?}: {said}");
    assert!(
        said.contains("500") && said.contains("cut off after 4096 bytes"),
        "{flood:?}: {said}"
    );
    let sent = reg.sent();
    assert!(
        sent < SLACK,
        "{flood:?}: the registry got {sent} bytes out (of {HOSTILE_CAP}) before the client stopped reading"
    );
}

#[test]
fn a_hostile_registrys_endless_upload_answer_is_cut_off_at_the_limit() {
    for flood in [Flood::Claimed, Flood::Chunked] {
        let reg = HostileRegistry::start(flood, None);
        let addr = reg.addr.clone();
        let env = Env::new(&[], &insecure(&addr));
        let file = plugin_file("echo");
        let out = env.run(&[
            "push",
            file.to_str().unwrap(),
            &format!("oci://{addr}/tools/huge:1"),
        ]);
        assert_cut_off(flood, &reg, &out);
    }
}

#[test]
fn a_hostile_registrys_endless_answers_to_sign_are_cut_off_at_the_limit() {
    let keys = tempfile::tempdir().unwrap();
    let (key, _) = openssl_key_pair(keys.path(), "signer");
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json",
                   "digest": format!("sha256:{}", "c".repeat(64)), "size": 2},
        "layers": [{"mediaType": "application/wasm",
                    "digest": format!("sha256:{}", "b".repeat(64)), "size": 1024}],
    })
    .to_string();
    for flood in [Flood::Claimed, Flood::Chunked] {
        // The manifest to sign never ends.
        let reg = HostileRegistry::start(flood, None);
        let addr = reg.addr.clone();
        let env = Env::new(&[], &insecure(&addr));
        let target = format!("oci://{addr}/tools/huge:1");
        let out = env.run(&["sign", &target, "--key", key.to_str().unwrap()]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(3), "{flood:?}: {said}");
        assert!(
            said.contains("larger than 262144 bytes"),
            "{flood:?}: {said}"
        );
        assert!(reg.sent() < SLACK, "{flood:?}: {} bytes sent", reg.sent());
        drop(reg);

        // The manifest is a component's; the signature's upload is answered without end.
        let reg = HostileRegistry::start(flood, Some(manifest.clone()));
        let addr = reg.addr.clone();
        let env = Env::new(&[], &insecure(&addr));
        let target = format!("oci://{addr}/tools/huge:1");
        let out = env.run(&["sign", &target, "--key", key.to_str().unwrap()]);
        assert_cut_off(flood, &reg, &out);
    }
}
