//! Plugins from a real OCI registry (`docker-registry`, started per test on 127.0.0.1): push, pull
//! by tag and by digest, the lockfile, offline serving, a moved tag, deleted and tampered blobs,
//! credentials, and cosign signatures made by openssl and curl (tests/e2e/oci/cosign-sign.sh); a
//! hostile registry whose answers never end is read no further than the limits, by pull, push and
//! sign.

mod bounded_publish;
mod hostile;
mod https;
mod registry;
mod sigstore;

use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};

use self::hostile::{Flood, HOSTILE_CAP, HostileRegistry};
use self::https::HttpsServer;
use self::registry::{PASSWORD, TestRegistry, USER, openssl_key_pair};
use crate::daemon::Daemon;
use crate::harness::{Env, plugin_file};

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `toolhost push FILE TARGET` in `env`; returns the manifest digest it printed.
fn push(env: &Env, plugin: &str, target: &str) -> String {
    let file = plugin_file(plugin);
    let out = env.run(&["push", file.to_str().unwrap(), target]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let digest = stdout.split_whitespace().last().unwrap().to_string();
    assert!(digest.starts_with("sha256:"), "{stdout}");
    digest
}

fn insecure(addr: &str) -> String {
    format!("[registries.\"{addr}\"]\ninsecure = true\n")
}

fn list_json(env: &Env) -> Value {
    let out = env.run(&["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tools(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn pushes_pulls_by_tag_and_digest_locks_and_serves_offline() {
    let Some(reg) = TestRegistry::start("pushes_pulls_…_serves_offline", false) else {
        return;
    };
    let addr = &reg.addr.clone();
    let publisher = Env::new(&[], &insecure(addr));
    let digest = push(&publisher, "echo", &format!("oci://{addr}/tools/echo:1.0"));
    // The same file pushed again is the same manifest: no timestamp in it.
    assert_eq!(
        push(&publisher, "echo", &format!("oci://{addr}/tools/echo:1.0")),
        digest
    );
    let math = push(&publisher, "math", &format!("oci://{addr}/tools/math:1.0"));

    let config = format!(
        "{}[plugins.echo]\nsource = \"oci://{addr}/tools/echo:1.0\"\n\
         [plugins.calc]\nsource = \"oci://{addr}/tools/math@{}\"\n",
        insecure(addr),
        math
    );
    let env = Env::new(&[], &config);
    // Not pulled yet: each sourced plugin is refused with what to run.
    let before = list_json(&env);
    assert!(tools(&before).is_empty(), "{before}");
    let reason = before["plugins"]["echo"]["reason"].as_str().unwrap();
    assert!(reason.contains("toolhost pull"), "{reason}");

    let out = env.run(&["pull"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let lock = std::fs::read_to_string(env.path().join("toolhost.lock")).unwrap();
    assert!(lock.contains(&format!("manifest = \"{digest}\"")), "{lock}");
    let echo_component =
        toolhost_trust::source::Digest::of(&std::fs::read(plugin_file("echo")).unwrap());
    assert!(
        lock.contains(&format!("component = \"{echo_component}\"")),
        "{lock}"
    );

    // Offline: the registry is gone, the store and the lock serve.
    drop(reg);
    let listed = list_json(&env);
    assert_eq!(
        tools(&listed)
            .into_iter()
            .filter(|t| t == "echo" || t == "calc")
            .count(),
        2,
        "{listed}"
    );
    let echo = &listed["plugins"]["echo"]["provenance"];
    assert_eq!(echo["source"], format!("oci://{addr}/tools/echo:1.0"));
    assert_eq!(echo["digest"], echo_component.to_string());
    assert_eq!(echo["manifest"], digest);
    assert_eq!(echo["signature"]["status"], "not_checked");
    env.call("echo", json!({"text": "from the registry"}))
        .assert_ok();
    let record = env.audit().pop().unwrap();
    assert_eq!(record["plugin_digest"], echo_component.to_string());
    assert_eq!(
        record["plugin_source"],
        format!("oci://{addr}/tools/echo:1.0")
    );
    // A second pull offline finds everything in the store and changes nothing.
    let out = env.run(&["pull"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("echo up to date"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(env.path().join("toolhost.lock")).unwrap(),
        lock
    );
}

#[test]
fn a_moved_tag_is_reported_and_only_followed_with_update() {
    let Some(reg) = TestRegistry::start("a_moved_tag_…", false) else {
        return;
    };
    let addr = &reg.addr.clone();
    let target = format!("oci://{addr}/tools/thing:stable");
    let config = format!("{}[plugins.thing]\nsource = \"{target}\"\n", insecure(addr));
    let env = Env::new(&[], &config);
    let first = push(&env, "echo", &target);
    assert_eq!(env.run(&["pull"]).status.code(), Some(0));
    // The publisher moves the tag to another component.
    let moved = push(&env, "math", &target);
    assert_ne!(first, moved);
    let out = env.run(&["pull"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&first) && said.contains(&format!("tag now points to {moved}")),
        "{said}"
    );
    assert!(tools(&list_json(&env)).contains(&"echo".to_string()));
    // A daemon serving the locked version picks up `pull --update` by hot reload.
    let mut daemon = Daemon::start(&env, &[]);
    assert!(!daemon.call("echo", json!({"text": "locked"})).is_error());
    let out = env.run(&["pull", "--update", "thing"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let changed = daemon.next_unsolicited(Duration::from_secs(30));
    assert_eq!(
        changed.as_ref().map(|m| m["method"].clone()),
        Some(json!("notifications/tools/list_changed")),
        "{changed:?}"
    );
    let listed = daemon.request("tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"calc") && !names.contains(&"echo"),
        "{listed}"
    );
    assert!(daemon.stop().success());
}

#[test]
fn tampered_and_deleted_blobs_are_refused_and_the_others_load() {
    let Some(reg) = TestRegistry::start("tampered_and_deleted_blobs_…", false) else {
        return;
    };
    let addr = &reg.addr.clone();
    let config = format!(
        "{}[plugins.echo]\nsource = \"oci://{addr}/tools/echo:1\"\n[plugins.gone]\nsource = \"oci://{addr}/tools/gone:1\"\n",
        insecure(addr)
    );
    // `math` stays a local file: it must keep loading whatever happens to the others.
    let env = Env::new(&["math"], &config);
    push(&env, "echo", &format!("oci://{addr}/tools/echo:1"));
    push(&env, "fs", &format!("oci://{addr}/tools/gone:1"));
    let echo_component =
        toolhost_trust::source::Digest::of(&std::fs::read(plugin_file("echo")).unwrap());
    let fs_component =
        toolhost_trust::source::Digest::of(&std::fs::read(plugin_file("fs")).unwrap());

    // In the registry: one blob altered (same length), one deleted.
    let blob = reg.blob_file(echo_component.as_str());
    let mut bytes = std::fs::read(&blob).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    std::fs::write(&blob, &bytes).unwrap();
    std::fs::remove_file(reg.blob_file(fs_component.as_str())).unwrap();
    let out = env.run(&["pull"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("echo not pulled") && said.contains("tampered"),
        "{said}"
    );
    assert!(said.contains("gone not pulled"), "{said}");
    assert!(
        !env.path().join("toolhost.lock").exists() || {
            let lock = std::fs::read_to_string(env.path().join("toolhost.lock")).unwrap();
            !lock.contains("[plugin.echo]") && !lock.contains("[plugin.gone]")
        }
    );
    let listed = list_json(&env);
    assert!(tools(&listed).contains(&"calc".to_string()), "{listed}");

    // Repaired upstream, pulled; then the local store's copy is altered: refused at load.
    bytes[at] ^= 0x55;
    std::fs::write(&blob, &bytes).unwrap();
    let out = env.run(&["pull", "echo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(tools(&list_json(&env)).contains(&"echo".to_string()));
    let stored = env
        .path()
        .join(".toolhost/store/sha256")
        .join(echo_component.hex());
    let mut local = std::fs::read(&stored).unwrap();
    local[at] ^= 0x55;
    std::fs::write(&stored, &local).unwrap();
    let listed = list_json(&env);
    assert!(!tools(&listed).contains(&"echo".to_string()), "{listed}");
    let reason = listed["plugins"]["echo"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("does not match") || reason.contains(echo_component.as_str()),
        "{reason}"
    );
    assert!(tools(&listed).contains(&"calc".to_string()), "{listed}");
}

#[test]
fn a_private_registry_takes_credentials_from_docker_config_or_the_environment() {
    let Some(reg) = TestRegistry::start("a_private_registry_…", true) else {
        return;
    };
    let addr = &reg.addr.clone();
    let target = format!("oci://{addr}/private/echo:1");
    let env = Env::new(
        &[],
        &format!("{}[plugins.echo]\nsource = \"{target}\"\n", insecure(addr)),
    );
    let docker = env.path().join("docker");
    std::fs::create_dir(&docker).unwrap();
    let anonymous = |args: &[&str]| {
        env.command(args)
            .env("DOCKER_CONFIG", &docker)
            .output()
            .unwrap()
    };

    // No credentials: refused, and said so.
    let out = anonymous(&["push", plugin_file("echo").to_str().unwrap(), &target]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).to_lowercase().contains("unauthorized") || text(&out).contains("401"),
        "{}",
        text(&out)
    );

    // `docker login`'s file.
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    std::fs::write(
        docker.join("config.json"),
        json!({"auths": {addr.as_str(): {"auth": auth}}}).to_string(),
    )
    .unwrap();
    let out = anonymous(&["push", plugin_file("echo").to_str().unwrap(), &target]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Named environment variables, in a fresh workspace without the Docker file.
    let config = format!(
        "[registries.\"{addr}\"]\ninsecure = true\nusername-env = \"REG_USER\"\npassword-env = \"REG_PASSWORD\"\n\
         [plugins.echo]\nsource = \"{target}\"\n"
    );
    let env2 = Env::new(&[], &config);
    let empty = env2.path().join("nodocker");
    let out = env2
        .command(&["pull"])
        .env("DOCKER_CONFIG", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("REG_USER is not set"), "{}", text(&out));
    let out = env2
        .command(&["pull"])
        .env("DOCKER_CONFIG", &empty)
        .env("REG_USER", USER)
        .env("REG_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    env2.call("echo", json!({"text": "private"})).assert_ok();
}

/// Every case of the issue, signed by openssl: valid, unsigned, wrong key, wrong digest, wrong
/// repository, another tag's signature. One pull; each refused plugin says why, the valid one loads.
#[test]
fn cosign_signatures_made_by_openssl_are_verified_before_anything_loads() {
    let Some(reg) = TestRegistry::start("cosign_signatures_…", false) else {
        return;
    };
    let addr = &reg.addr.clone();
    let keys = tempfile::tempdir().unwrap();
    let (trusted_key, trusted_pub) = openssl_key_pair(keys.path(), "trusted");
    let (other_key, _) = openssl_key_pair(keys.path(), "other");
    let publisher = Env::new(&[], &insecure(addr));
    let mut digests = std::collections::BTreeMap::new();
    for repo in [
        "valid",
        "unsigned",
        "wrongkey",
        "wrongdigest",
        "wrongrepo",
        "othertag",
    ] {
        let d = push(&publisher, "echo", &format!("oci://{addr}/signed/{repo}:1"));
        digests.insert(repo, d);
    }
    // The same component under another tag has the same manifest digest; give "othertag:2" a
    // different one (math), signed properly, and copy that signature to tag 1's signature tag.
    let other = push(
        &publisher,
        "math",
        &format!("oci://{addr}/signed/othertag:2"),
    );
    let d = |r: &str| digests[r].clone();
    reg.cosign_sign("signed/valid", &d("valid"), &trusted_key, None, false);
    reg.cosign_sign("signed/wrongkey", &d("wrongkey"), &other_key, None, false);
    reg.cosign_sign(
        "signed/wrongdigest",
        &d("wrongdigest"),
        &trusted_key,
        Some((&format!("{addr}/signed/wrongdigest"), &other)),
        false,
    );
    reg.cosign_sign(
        "signed/wrongrepo",
        &d("wrongrepo"),
        &trusted_key,
        Some((&format!("{addr}/signed/valid"), &d("wrongrepo"))),
        false,
    );
    reg.cosign_sign("signed/othertag", &other, &trusted_key, None, false);
    reg.cosign_sign(
        "signed/othertag",
        &d("othertag"),
        &trusted_key,
        Some((&format!("{addr}/signed/othertag"), &other)),
        false,
    );

    let mut config = insecure(addr);
    config.push_str(&format!(
        "[trust.\"{addr}/signed\"]\nkeys = [\"keys/trusted.pub\"]\n"
    ));
    for repo in digests.keys() {
        config.push_str(&format!(
            "[plugins.{repo}]\nsource = \"oci://{addr}/signed/{repo}:1\"\nprefix = \"{repo}_\"\n"
        ));
    }
    let env = Env::new(&[], &config);
    std::fs::create_dir(env.path().join("keys")).unwrap();
    std::fs::copy(&trusted_pub, env.path().join("keys/trusted.pub")).unwrap();
    let out = env.run(&["pull"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("valid pulled") && said.contains("signed (keys/trusted.pub)"),
        "{said}"
    );
    for (repo, needle) in [
        ("unsigned", "is not signed"),
        ("wrongkey", "no trusted key verifies this signature"),
        (
            "wrongdigest",
            &format!("the signature is for manifest {other}"),
        ),
        (
            "wrongrepo",
            &format!("the signature is for repository {addr}/signed/valid"),
        ),
        (
            "othertag",
            &format!("the signature is for manifest {other}"),
        ),
    ] {
        let line = said
            .lines()
            .find(|l| l.starts_with(&format!("{repo} not pulled")))
            .unwrap_or_else(|| panic!("no line for {repo}:\n{said}"));
        assert!(line.contains(needle), "{repo}: {line}");
    }
    // Refused before anything was kept: the store holds no component of a refused artifact
    // (all share echo's component with the valid one, so look at the lock instead).
    let lock = std::fs::read_to_string(env.path().join("toolhost.lock")).unwrap();
    assert!(
        lock.contains("[plugin.valid]") && lock.contains("signature"),
        "{lock}"
    );
    assert_eq!(lock.matches("source = ").count(), 1, "{lock}");
    let listed = list_json(&env);
    assert_eq!(tools(&listed), vec!["valid_echo".to_string()], "{listed}");
    assert_eq!(
        listed["plugins"]["valid"]["provenance"]["signature"]["key"],
        "keys/trusted.pub"
    );

    // Trust is checked again at every load, offline: a config that no longer trusts the key
    // refuses the locked artifact.
    drop(reg);
    let (_, stranger) = openssl_key_pair(keys.path(), "stranger");
    std::fs::copy(&stranger, env.path().join("keys/trusted.pub")).unwrap();
    let listed = list_json(&env);
    assert!(tools(&listed).is_empty(), "{listed}");
    let reason = listed["plugins"]["valid"]["reason"].as_str().unwrap();
    assert!(reason.contains("no trusted key verifies"), "{reason}");
}

/// `toolhost sign` writes what openssl verifies, where cosign looks for it; and a signed artifact
/// pulls with `[trust]` requiring it.
#[test]
fn toolhost_sign_writes_signatures_openssl_verifies() {
    let Some(reg) = TestRegistry::start("toolhost_sign_…", false) else {
        return;
    };
    let addr = &reg.addr.clone();
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = openssl_key_pair(keys.path(), "signer");
    let target = format!("oci://{addr}/tools/echo:1");
    let config = format!(
        "{}[trust.\"{addr}\"]\nkeys = [\"signer.pub\"]\n[plugins.echo]\nsource = \"{target}\"\n",
        insecure(addr)
    );
    let env = Env::new(&[], &config);
    std::fs::copy(&public, env.path().join("signer.pub")).unwrap();
    let digest = push(&env, "echo", &target);
    // Unsigned: refused, with what to do.
    let out = env.run(&["pull"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("is not signed"), "{}", text(&out));
    let out = env.run(&["sign", &target, "--key", key.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Read it back with curl, check it with openssl.
    let get = |path: &str, accept: &str| {
        let out = std::process::Command::new("curl")
            .args([
                "-fsS",
                "-H",
                &format!("Accept: {accept}"),
                &format!("http://{addr}/v2/tools/echo/{path}"),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "curl {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let tag = format!("sha256-{}.sig", digest.trim_start_matches("sha256:"));
    let manifest: Value = serde_json::from_slice(&get(
        &format!("manifests/{tag}"),
        "application/vnd.oci.image.manifest.v1+json",
    ))
    .unwrap();
    let layer = &manifest["layers"][0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = get(
        &format!("blobs/{}", layer["digest"].as_str().unwrap()),
        "*/*",
    );
    let payload_json: Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        payload_json["critical"]["image"]["docker-manifest-digest"],
        digest
    );
    assert_eq!(
        payload_json["critical"]["identity"]["docker-reference"],
        format!("{addr}/tools/echo")
    );
    use base64::Engine as _;
    let signature = base64::engine::general_purpose::STANDARD
        .decode(
            layer["annotations"]["dev.cosignproject.cosign/signature"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    let dir = keys.path();
    std::fs::write(dir.join("payload"), &payload).unwrap();
    std::fs::write(dir.join("sig"), &signature).unwrap();
    let verified = std::process::Command::new("openssl")
        .args(["dgst", "-sha256", "-verify"])
        .arg(&public)
        .arg("-signature")
        .arg(dir.join("sig"))
        .arg(dir.join("payload"))
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&verified.stdout)
    );

    let out = env.run(&["pull"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("signed (signer.pub)"), "{}", text(&out));
    env.call("echo", json!({"text": "signed"})).assert_ok();
}

/// An `https://` source: pulled only when its bytes have the pinned digest, over verified TLS.
#[test]
fn an_https_source_is_pinned_by_its_digest_and_verified_over_tls() {
    let server = HttpsServer::start();
    std::fs::copy(plugin_file("echo"), server.root.join("echo.wasm")).unwrap();
    let echo = toolhost_trust::source::Digest::of(&std::fs::read(plugin_file("echo")).unwrap());
    let wrong = toolhost_trust::source::Digest::of(b"something else");
    let url = format!("{}/echo.wasm", server.base);
    let config = format!(
        "[plugins.echo]\nsource = \"{url}\"\nsha256 = \"{}\"\n[plugins.bad]\nsource = \"{url}\"\nsha256 = \"{wrong}\"\n",
        echo.hex()
    );
    let env = Env::new(&[], &config);
    // The test CA is not trusted by default: TLS refuses the server.
    let out = env.run(&["pull"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("echo not pulled"), "{}", text(&out));
    let out = env
        .command(&["pull"])
        .env("SSL_CERT_FILE", &server.ca)
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("echo pulled: {url}")), "{said}");
    assert!(
        said.contains(&format!("served {echo}, but the config pins {wrong}")),
        "{said}"
    );
    drop(server);
    env.call("echo", json!({"text": "over https"})).assert_ok();
    assert_eq!(env.audit().pop().unwrap()["plugin_source"], url);
}

/// Bytes a client that stops at a limit of a few hundred KiB may still have been sent: the kernel's
/// socket buffers on both ends of a loopback connection hold several MiB.
const SLACK: u64 = 32 << 20;

#[test]
fn a_hostile_registrys_endless_manifest_is_cut_off_at_the_limit() {
    for flood in [Flood::Claimed, Flood::Chunked] {
        let reg = HostileRegistry::start(flood, None);
        let addr = reg.addr.clone();
        let config = format!(
            "{}[plugins.huge]\nsource = \"oci://{addr}/tools/huge:1\"\n",
            insecure(&addr)
        );
        let env = Env::new(&[], &config);
        let out = env.run(&["pull"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{flood:?}: {said}");
        assert!(
            said.contains("huge not pulled") && said.contains("larger than 262144 bytes"),
            "{flood:?}: {said}"
        );
        let sent = reg.sent();
        assert!(
            sent < SLACK,
            "{flood:?}: the registry got {sent} bytes out (of {HOSTILE_CAP}) before pull stopped reading"
        );
    }
}

#[test]
fn a_hostile_registrys_endless_blob_is_cut_off_at_its_declared_size() {
    // A valid component manifest whose layer says 1 MiB; the blob never ends.
    let declared = 1u64 << 20;
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.wasm.config.v0+json",
                   "digest": format!("sha256:{}", "c".repeat(64)), "size": 2},
        "layers": [{"mediaType": "application/wasm",
                    "digest": format!("sha256:{}", "b".repeat(64)), "size": declared}],
    })
    .to_string();
    for flood in [Flood::Claimed, Flood::Chunked] {
        let reg = HostileRegistry::start(flood, Some(manifest.clone()));
        let addr = reg.addr.clone();
        let config = format!(
            "{}[plugins.huge]\nsource = \"oci://{addr}/tools/huge:1\"\n",
            insecure(&addr)
        );
        let env = Env::new(&[], &config);
        let out = env.run(&["pull"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{flood:?}: {said}");
        assert!(
            said.contains("huge not pulled")
                && said.contains(&format!("larger than {declared} bytes")),
            "{flood:?}: {said}"
        );
        assert!(reg.sent() < SLACK, "{flood:?}: {} bytes sent", reg.sent());
        // Nothing half-read is left in the store.
        let incoming = env.path().join(".toolhost/store/sha256");
        let left = std::fs::read_dir(&incoming).map_or(0, |d| d.count());
        assert_eq!(left, 0, "{flood:?}: files left in {}", incoming.display());
    }
}
