//! The paths one tool's calls may never touch, for the sandbox's filesystem to enforce on every
//! access: the `deny` rules with a path pattern that name the tool, the grants' `exclude` lists,
//! and the `ask` rules with a path pattern, lifted only for the subject a person approved. So a rule
//! is a capability, not only an input filter: a plugin that ignores its input and opens a denied
//! path anyway is refused by the host.
//!
//! A path is judged twice, as written (with `..` applied lexically) and where it really leads
//! (links followed inside the grant), and refused when either is denied. A rule on `P/**` protects
//! `P` itself, and an operation that renames, replaces or removes a folder is judged as touching
//! everything the folder could hold ([`PathGuard::check_tree`]).

use std::path::Path;

use globset::GlobMatcher;

use super::beneath::Beneath;
use super::mounts::Mounts;
use super::path::{compile_glob, is_match};
use super::rule::RuleProblem;

/// What one call's filesystem may not touch.
#[derive(Debug, Clone, Default)]
pub struct PathGuard {
    mounts: Mounts,
    denials: Vec<Denial>,
    /// Guest paths a person approved for this call: `ask` areas at or below them are open.
    approved: Vec<String>,
}

/// One denied area of guest paths.
#[derive(Debug, Clone)]
pub struct Denial {
    glob: GlobMatcher,
    /// `P` for a glob `P/**`: the folder a rule protects is protected itself.
    own: Option<GlobMatcher>,
    /// For judging a folder by everything it could hold.
    beneath: Beneath,
    /// The rule or exclude entry, for the refusal message.
    why: String,
    /// From an `ask` rule: an approval of the call's subject opens the subject.
    ask: bool,
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
    fn new(glob: GlobMatcher, why: String, ask: bool) -> Self {
        let text = glob.glob().glob();
        let own = text
            .strip_suffix("/**")
            .filter(|p| !p.is_empty())
            .and_then(|p| compile_glob(p, true).ok());
        Self {
            beneath: Beneath::new(text),
            own,
            glob,
            why,
            ask,
        }
    }

    /// A deny rule's guest glob.
    pub(super) fn rule(glob: GlobMatcher, rule: &str) -> Self {
        Self::new(glob, format!("the rule `deny: {rule}`"), false)
    }

    /// An ask rule's guest glob: denied unless the call was approved for the path.
    pub(super) fn ask(glob: GlobMatcher, rule: &str) -> Self {
        let why = format!("the rule `ask: {rule}` (an approval covers only the path it showed)");
        Self::new(glob, why, true)
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
            .map(|g| Ok(Self::new(compile_glob(g, true)?, why.clone(), false)))
            .collect()
    }

    fn matches(&self, guest: &str) -> bool {
        is_match(&self.glob, guest) || self.own.as_ref().is_some_and(|g| is_match(g, guest))
    }
}

impl PathGuard {
    /// A guard over `mounts` refusing `denials`.
    pub fn new(mounts: Mounts, denials: Vec<Denial>) -> Self {
        Self {
            mounts,
            denials,
            approved: Vec::new(),
        }
    }

    /// The same guard for a call a person approved: `ask` areas at or below `subjects` (guest
    /// paths) are open to it. Deny rules and excludes stay.
    pub fn approved(&self, subjects: Vec<String>) -> Self {
        Self {
            approved: subjects,
            ..self.clone()
        }
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
            return Err(outside(path));
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
            None => Err(outside(&host.display().to_string())),
        }
    }

    /// The guest path of a host path: refused when it is in no grant.
    pub fn guest_of(&self, host: &Path) -> Result<String, Refusal> {
        self.mounts
            .guest_path_of(host)
            .ok_or_else(|| outside(&host.display().to_string()))
    }

    /// Judge `path` as written, relative to the host directory `dir`, with `..` applied
    /// lexically (where it really leads is judged on the descriptors the sandbox resolves).
    pub fn check_written(&self, dir: &Path, path: &str) -> Result<(), Refusal> {
        let base = self.guest_of(dir)?;
        match lexical_join(&base, path) {
            Some(written) => self.check_guest(&written),
            None => Ok(()),
        }
    }

    /// Judge a path as the guest's root sees it.
    pub fn check_guest(&self, guest: &str) -> Result<(), Refusal> {
        self.refuse_if(guest, |d| d.matches(guest))
    }

    /// Judge a folder about to be renamed, replaced or removed with what it holds: refused when
    /// the folder or anything that could be beneath it is denied.
    pub fn check_tree(&self, guest: &str) -> Result<(), Refusal> {
        self.refuse_if(guest, |d| d.matches(guest) || d.beneath.reaches(guest))
    }

    fn refuse_if(&self, guest: &str, hit: impl Fn(&Denial) -> bool) -> Result<(), Refusal> {
        let lifted = |d: &Denial| d.ask && self.approved.iter().any(|a| is_within(guest, a));
        match self.denials.iter().find(|d| hit(d) && !lifted(d)) {
            Some(d) => Err(Refusal {
                path: guest.to_owned(),
                why: d.why.clone(),
            }),
            None => Ok(()),
        }
    }
}

/// Whether the guest path `path` is `area` or below it (`""` is the root, above everything).
fn is_within(path: &str, area: &str) -> bool {
    area.is_empty()
        || path == area
        || path
            .strip_prefix(area)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn outside(path: &str) -> Refusal {
    Refusal {
        path: path.to_owned(),
        why: "no directory grant (it is outside every granted directory)".into(),
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
            // A rule on a folder's contents protects the folder itself.
            "secrets",
            "alias",
        ] {
            assert!(g.check_at(&root, path).is_err(), "{path} should be refused");
        }
        assert!(g.check_at(&root.join("src"), "../secrets/key").is_err());
        for path in ["src/main.rs", "secretsx", "env", "src"] {
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
    fn a_folder_is_judged_by_what_it_could_hold() {
        let dir = tempfile::tempdir().unwrap();
        let g = guard(dir.path());
        // Renaming the root or `secrets` would move the denied files; `src` holds none.
        for tree in ["", "secrets", "secrets/sub", ".env"] {
            assert!(g.check_tree(tree).is_err(), "{tree} should be refused");
        }
        for tree in ["src", "secretsx", "env"] {
            assert_eq!(g.check_tree(tree), Ok(()), "{tree}");
        }
    }

    #[test]
    fn an_approval_opens_an_ask_area_at_its_subject_only() {
        let dir = tempfile::tempdir().unwrap();
        let rule: super::super::Rule = "write_file(./.git/**)".parse().unwrap();
        let ask = Denial::ask(rule.guest_glob().unwrap().clone(), rule.as_str());
        let deny: super::super::Rule = "write_file(./.git/objects/**)".parse().unwrap();
        let deny = Denial::rule(deny.guest_glob().unwrap().clone(), deny.as_str());
        let g = PathGuard::new(Mounts::new([(".", dir.path())]), vec![ask, deny]);
        assert!(g.check_guest(".git/config").is_err());
        assert!(g.check_guest(".git").is_err());
        let approved = g.approved(vec![".git/config".into()]);
        assert_eq!(approved.check_guest(".git/config"), Ok(()));
        assert!(approved.check_guest(".git/hooks/pre-commit").is_err());
        assert!(approved.check_tree(".git").is_err());
        // An approval of the whole folder opens it, but never what a deny rule closes.
        let all = g.approved(vec![".git".into()]);
        assert_eq!(all.check_guest(".git/hooks/pre-commit"), Ok(()));
        assert!(all.check_guest(".git/objects/ab").is_err());
        assert!(g.check_guest(".gitignore").is_ok());
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
