use super::*;

fn doc(text: &str) -> DocumentMut {
    text.parse().unwrap()
}

fn dir(host: &str, read_write: bool) -> Grant {
    Grant::Dir {
        host: host.into(),
        read_write,
        guest: None,
        exclude: Vec::new(),
    }
}

fn env(name: &str, value: Option<&str>) -> Grant {
    Grant::Env {
        name: name.into(),
        value: value.map(Into::into),
    }
}

/// A folder with `src` and `docs` in it, and `alias`, a symlink to `src`.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("src"), dir.path().join("alias")).unwrap();
    dir
}

#[test]
fn a_first_grant_writes_a_section_and_keeps_the_rest_as_written() {
    let base = folder();
    let mut d = doc("# my policy\n[limits]\ntimeout-ms = 5000 # five seconds\n");
    assert_eq!(
        grant(&mut d, base.path(), "fs", &dir("src", false)).unwrap(),
        Change::Added
    );
    assert_eq!(
        d.to_string(),
        "# my policy\n[limits]\ntimeout-ms = 5000 # five seconds\n\n\
         [plugins.fs]\ndirs = [{ host = \"src\", mode = \"ro\" }]\n"
    );
}

#[test]
fn a_second_directory_gets_its_own_guest_path_and_a_repeat_changes_nothing() {
    let base = folder();
    let mut d = doc("[plugins.fs]\ndirs = [{ host = \"src\" }]\n");
    assert_eq!(
        grant(&mut d, base.path(), "fs", &dir("src", false)).unwrap(),
        Change::Unchanged
    );
    assert_eq!(
        grant(&mut d, base.path(), "fs", &dir("docs", true)).unwrap(),
        Change::Added
    );
    assert!(
        d.to_string()
            .contains("{ host = \"docs\", guest = \"docs\", mode = \"rw\" }"),
        "{d}"
    );
    // The same folder by another name: its mode changes, no second grant appears.
    assert_eq!(
        grant(&mut d, base.path(), "fs", &dir("./alias/", true)).unwrap(),
        Change::Updated
    );
    assert_eq!(d.to_string().matches("host =").count(), 2, "{d}");
    assert!(
        d.to_string()
            .starts_with("[plugins.fs]\ndirs = [{ host = \"src\", mode = \"rw\" }, "),
        "{d}"
    );
}

#[test]
fn revoking_a_directory_holds_for_every_spelling_of_it() {
    let base = folder();
    let absolute = base.path().join("src").display().to_string();
    for spelling in [
        "src",
        "./src",
        "src/",
        "alias",
        "docs/../src",
        absolute.as_str(),
    ] {
        let mut d = doc(
            "[plugins.fs]\ndirs = [{ host = \"./src/\" }, { host = \"docs\", guest = \"d\" }]\n",
        );
        assert_eq!(
            revoke(&mut d, base.path(), "fs", &dir(spelling, false)).unwrap(),
            Change::Removed
        );
        assert_eq!(
            d.to_string(),
            "[plugins.fs]\ndirs = [{ host = \"docs\", guest = \"d\" }]\n",
            "{spelling}"
        );
    }
}

#[test]
fn tables_written_as_an_array_of_tables_are_edited_in_place() {
    let base = folder();
    let mut d = doc("[[plugins.fs.dirs]]\nhost = \"src\"\nmode = \"ro\"\n");
    assert_eq!(
        grant(&mut d, base.path(), "fs", &dir("docs", false)).unwrap(),
        Change::Added
    );
    assert_eq!(
        d.to_string().matches("[[plugins.fs.dirs]]").count(),
        2,
        "{d}"
    );
    revoke(&mut d, base.path(), "fs", &dir("src", false)).unwrap();
    revoke(&mut d, base.path(), "fs", &dir("docs", false)).unwrap();
    assert_eq!(d.to_string().trim(), "", "nothing left: {d}");
}

#[test]
fn revoking_what_is_not_granted_names_what_is() {
    let base = folder();
    let mut d = doc("[plugins.fs]\ndirs = [{ host = \"src\" }]\n");
    let e = revoke(&mut d, base.path(), "fs", &dir("docs", false)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "plugins.fs has no dir grant \"docs\"; it has: src"
    );
    let e = revoke(&mut d, base.path(), "math", &env("A", None)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "plugins.math has no env grant \"A\"; it has: none"
    );
    assert_eq!(
        d.to_string(),
        "[plugins.fs]\ndirs = [{ host = \"src\" }]\n",
        "unchanged"
    );
}

#[test]
fn destinations_match_by_meaning_not_by_spelling() {
    let base = folder();
    let mut d = doc("[plugins.fetch.network]\nallow = [\"https://docs.rs\"] # docs\n");
    let same = Grant::Network("HTTPS://Docs.rs:443".into());
    assert_eq!(
        grant(&mut d, base.path(), "fetch", &same).unwrap(),
        Change::Unchanged
    );
    let other = Grant::Network("https://api.github.com".into());
    assert_eq!(
        grant(&mut d, base.path(), "fetch", &other).unwrap(),
        Change::Added
    );
    revoke(&mut d, base.path(), "fetch", &same).unwrap();
    assert!(
        d.to_string()
            .contains("allow = [\"https://api.github.com\"]"),
        "{d}"
    );
    revoke(&mut d, base.path(), "fetch", &other).unwrap();
    assert_eq!(
        d.to_string().trim(),
        "",
        "an empty allowlist goes with its section: {d}"
    );
    let bad = grant(
        &mut d,
        base.path(),
        "fetch",
        &Grant::Network("docs.rs".into()),
    );
    assert!(matches!(bad, Err(EditError::Destination(..))), "{bad:?}");
}

#[test]
fn a_network_section_with_more_than_the_allowlist_stays_for_validation_to_judge() {
    let base = folder();
    let text = "[plugins.fetch.network]\nallow = [\"https://docs.rs\"]\nmax-requests = 3\n";
    let mut d = doc(text);
    revoke(
        &mut d,
        base.path(),
        "fetch",
        &Grant::Network("https://docs.rs".into()),
    )
    .unwrap();
    assert!(d.to_string().contains("allow = []"), "{d}");
}

#[test]
fn an_env_grant_is_either_passed_through_or_literal_never_both() {
    let base = folder();
    let mut d = doc("");
    assert_eq!(
        grant(&mut d, base.path(), "gh", &env("TOKEN", None)).unwrap(),
        Change::Added
    );
    assert_eq!(
        grant(&mut d, base.path(), "gh", &env("TOKEN", None)).unwrap(),
        Change::Unchanged
    );
    assert_eq!(d.to_string(), "[plugins.gh]\nenv-from-host = [\"TOKEN\"]\n");
    assert_eq!(
        grant(&mut d, base.path(), "gh", &env("TOKEN", Some("x"))).unwrap(),
        Change::Updated
    );
    assert_eq!(
        d.to_string(),
        "[plugins.gh]\n\n[plugins.gh.env]\nTOKEN = \"x\"\n"
    );
    assert_eq!(
        grant(&mut d, base.path(), "gh", &env("TOKEN", None)).unwrap(),
        Change::Updated
    );
    assert_eq!(d.to_string().matches("TOKEN").count(), 1, "{d}");
    assert_eq!(
        revoke(&mut d, base.path(), "gh", &env("TOKEN", None)).unwrap(),
        Change::Removed
    );
    assert_eq!(d.to_string().trim(), "");
}

#[test]
fn other_settings_of_a_section_survive_a_revoke() {
    let base = folder();
    let mut d = doc("[plugins.fs]\nprefix = \"my_\"\ndirs = [{ host = \"src\" }]\n");
    revoke(&mut d, base.path(), "fs", &dir("src", false)).unwrap();
    assert_eq!(d.to_string(), "[plugins.fs]\nprefix = \"my_\"\n");
}

#[test]
fn a_setting_in_an_unexpected_form_is_refused_not_overwritten() {
    let base = folder();
    let mut d = doc("[plugins.fs]\ndirs = \"src\"\n");
    let e = grant(&mut d, base.path(), "fs", &dir("docs", false)).unwrap_err();
    assert!(e.to_string().contains("plugins.fs.dirs"), "{e}");
    let mut d = doc("plugins = 3\n");
    assert!(grant(&mut d, base.path(), "fs", &dir("docs", false)).is_err());
}
