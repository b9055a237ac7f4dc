//! The paths one tool's calls may never touch, for the sandbox's filesystem to enforce on every
//! access: the `deny` rules with a path pattern that name the tool, and the grants' `exclude` lists.
//! So a rule is a capability, not only an input filter: a plugin that ignores its input and opens a
//! denied path anyway is refused by the host.
//!
//! A path is judged twice, as written (with `..` applied lexically) and where it really leads
//! (links followed inside the grant), and refused when either is denied.

use std::path::Path;

use globset::GlobMatcher;

use super::mounts::Mounts;
use super::path::{compile_glob, is_match};
use super::rule::RuleProblem;

/// What one call's filesystem may not touch.
#[derive(Debug, Clone, Default)]
pub struct PathGuard {
    mounts: Mounts,
    denials: Vec<Denial>,
}

/// One denied area of guest paths.
#[derive(Debug, Clone)]
pub struct Denial {
    glob: GlobMatcher,
    /// The rule or exclude entry, for the refusal message.
    why: String,
}

/// Why the guard refused an access; shown to the guest as an access error and logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{path}` is denied by {why}")]
pub struct Refusal {
    /// The guest path refused.
    pub path: String,
    /// The rule or exclude entry.
    pub why: String,
}

impl Denial {
    /// A deny rule's guest glob.
    pub(super) fn rule(glob: GlobMatcher, rule: &str) -> Self {
        Self {
            glob,
            why: format!("the rule `deny: {rule}`"),
        }
    }

    /// An `exclude` entry of the grant mounted at `guest_root`: the path and everything under it.
    /// Entries are globs relative to the grant's root and may not climb out of it.
    pub fn exclude(guest_root: &str, entry: &str) -> Result<Vec<Self>, RuleProblem> {
        let entry_path = entry.trim_start_matches("./").trim_end_matches('/');
        if entry_path.is_empty()
            || entry_path.starts_with('/')
            || entry_path.split('/').any(|s| s == ".." || s == ".")
        {
            return Err(RuleProblem::Glob {
                glob: entry.to_owned(),
                message: "an exclude entry is a path inside its directory, without `/`, `.` or `..` segments".into(),
            });
        }
        let base = if guest_root.is_empty() {
            entry_path.to_owned()
        } else {
            format!("{guest_root}/{entry_path}")
        };
        let why = format!("`exclude = [\"{entry}\"]` on its directory grant");
        [base.clone(), format!("{base}/**")]
            .iter()
            .map(|g| {
                Ok(Self {
                    glob: compile_glob(g, true)?,
                    why: why.clone(),
                })
            })
            .collect()
    }
}

impl PathGuard {
    /// A guard over `mounts` refusing `denials`.
    pub fn new(mounts: Mounts, denials: Vec<Denial>) -> Self {
        Self { mounts, denials }
    }

    /// Whether nothing is denied: the sandbox can skip every check.
    pub fn is_open(&self) -> bool {
        self.denials.is_empty()
    }

    /// Judge `path`, opened relative to the host directory `dir` the guest holds.
    pub fn check_at(&self, dir: &Path, path: &str) -> Result<(), Refusal> {
        if self.is_open() {
            return Ok(());
        }
        let Some(base) = self.mounts.guest_path_of(dir) else {
            return Err(Refusal {
                path: path.to_owned(),
                why: "no directory grant (it is outside every granted directory)".into(),
            });
        };
        if let Some(written) = lexical_join(&base, path) {
            self.check_guest(&written)?;
        }
        match self.mounts.resolve_at(dir, path) {
            Some(Ok(resolved)) => self.check_guest(&resolved.guest),
            // cap-std refuses the same paths: escapes never open anything.
            Some(Err(_)) | None => Ok(()),
        }
    }

    /// Judge a file the guest has opened, by where it is on the host.
    pub fn check_host(&self, host: &Path) -> Result<(), Refusal> {
        if self.is_open() {
            return Ok(());
        }
        match self.mounts.guest_path_of(host) {
            Some(guest) => self.check_guest(&guest),
            None => Err(Refusal {
                path: host.display().to_string(),
                why: "no directory grant (it is outside every granted directory)".into(),
            }),
        }
    }

    /// Judge a path as the guest's root sees it.
    pub fn check_guest(&self, guest: &str) -> Result<(), Refusal> {
        match self.denials.iter().find(|d| is_match(&d.glob, guest)) {
            Some(d) => Err(Refusal {
                path: guest.to_owned(),
                why: d.why.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// `path` below the guest path `base`, with `..` applied lexically; `None` when it climbs out of the root.
fn lexical_join(base: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|s| !s.is_empty()).collect();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn guard(root: &Path) -> PathGuard {
        let rule: super::super::Rule = "write_file(./secrets/**)".parse().unwrap();
        let mut denials = vec![Denial::rule(
            rule.guest_glob().unwrap().clone(),
            rule.as_str(),
        )];
        denials.extend(Denial::exclude("", ".env").unwrap());
        PathGuard::new(Mounts::new([(".", root)]), denials)
    }

    #[test]
    fn refuses_denied_paths_however_they_are_spelt() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        symlink("secrets", root.join("alias")).unwrap();
        symlink(".env", root.join("innocent")).unwrap();
        let g = guard(&root);
        for path in [
            "secrets/key",
            "./secrets/key",
            "src/../secrets/key",
            "alias/key",
            ".env",
            "innocent",
            ".env/x",
        ] {
            assert!(g.check_at(&root, path).is_err(), "{path} should be refused");
        }
        assert!(g.check_at(&root.join("src"), "../secrets/key").is_err());
        for path in ["src/main.rs", "secretsx", "secrets", "env"] {
            assert_eq!(g.check_at(&root, path), Ok(()), "{path}");
        }
        let refusal = g.check_at(&root, "alias/key").unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "`secrets/key` is denied by the rule `deny: write_file(./secrets/**)`"
        );
        assert!(g.check_host(&root.join("secrets/key")).is_err());
        assert!(g.check_host(Path::new("/etc/passwd")).is_err());
    }

    #[test]
    fn exclude_entries_stay_inside_their_directory() {
        assert!(Denial::exclude("", "../x").is_err());
        assert!(Denial::exclude("", "/etc").is_err());
        assert!(Denial::exclude("", "").is_err());
        assert!(Denial::exclude("data", "cache/*.db").is_ok());
        assert!(PathGuard::default().is_open());
    }
}
