//! The daemon's own files: which paths are protected, and the grants refused over them.

use super::*;

fn protect(kind: Kind, path: PathBuf) -> Protected {
    Protected {
        setting: "s".into(),
        path,
        kind,
    }
}

fn check(grant: &Path, p: Protected) -> Result<(), String> {
    check_mode(grant, p, true)
}

fn check_mode(grant: &Path, p: Protected, read_only: bool) -> Result<(), String> {
    let grants = [GrantRef {
        key: "plugins.fs.dirs[0].host".into(),
        host: grant,
        read_only,
    }];
    refuse_grants_over(&grants, &[p]).map_err(|e| e.to_string())
}

#[test]
fn refuses_a_grant_covering_a_file_or_folder_that_does_not_exist_yet() {
    let root = tempfile::tempdir().unwrap();
    let e = check(
        root.path(),
        protect(Kind::Audit, root.path().join(".toolhost/audit.jsonl")),
    )
    .unwrap_err();
    assert!(
        e.contains("plugins.fs.dirs[0].host") && e.contains("covers the audit log"),
        "{e}"
    );
    let e = check(
        root.path(),
        protect(Kind::Cache, root.path().join("a/b/../cache")),
    )
    .unwrap_err();
    assert!(e.contains("covers the compile cache"), "{e}");
}

#[test]
fn refuses_a_grant_inside_the_cache_and_a_writable_one_inside_the_plugins_folder() {
    let root = tempfile::tempdir().unwrap();
    let inner = root.path().join("x/inner");
    std::fs::create_dir_all(&inner).unwrap();
    let e = check(&inner, protect(Kind::Cache, root.path().join("x"))).unwrap_err();
    assert!(e.contains("lies inside the compile cache"), "{e}");
    check(&inner, protect(Kind::Plugins, root.path().join("x"))).unwrap();
    let e = check_mode(&inner, protect(Kind::Plugins, root.path().join("x")), false).unwrap_err();
    assert!(e.contains("lies inside the plugins folder"), "{e}");
}

#[cfg(unix)]
#[test]
fn sees_through_a_symlinked_alias() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("state")).unwrap();
    std::os::unix::fs::symlink(root.path().join("state"), root.path().join("alias")).unwrap();
    let e = check(
        &root.path().join("alias"),
        protect(Kind::Secret, root.path().join("state/token")),
    )
    .unwrap_err();
    assert!(e.contains("covers a secrets file"), "{e}");
}

#[test]
fn no_grant_reaches_a_callers_secret_file() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("keys")).unwrap();
    std::fs::write(root.path().join("keys/alice"), "alice-credential-123\n").unwrap();
    let text = r#"
        [auth]
        issuer = "https://idp.example.com"
        audience = "https://tools.example.com/mcp"
        [[callers]]
        name = "alice"
        match = { sub = "alice" }
        secrets.github = { from-file = "keys/alice" }
        [plugins.fs]
        dirs = [{ host = "keys", mode = "ro" }]
    "#;
    let raw = toml::from_str(text).unwrap();
    let e = crate::config::Config::from_raw(raw, root.path(), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("plugins.fs.dirs[0].host") && e.contains("callers[0].secrets.github.from-file"),
        "{e}"
    );
}

#[test]
fn allows_a_sibling_folder() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("work")).unwrap();
    for kind in [Kind::Cache, Kind::Audit, Kind::Config, Kind::Plugins] {
        check(
            &root.path().join("work"),
            protect(kind, root.path().join(".toolhost/thing")),
        )
        .unwrap();
    }
    // A name that merely starts like the protected folder is not inside it.
    std::fs::create_dir(root.path().join("cache-old")).unwrap();
    check(
        &root.path().join("cache-old"),
        protect(Kind::Cache, root.path().join("cache")),
    )
    .unwrap();
}
