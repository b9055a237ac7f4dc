//! Whether a path glob can match a path *or anything beneath it*: what renaming, replacing or
//! removing a folder is judged by. Renaming `.git` to `x` and back would otherwise carry
//! `.git/hooks/pre-commit` past a rule on `.git/**` as `x/hooks/pre-commit`, a name no rule
//! denies; so an operation on a folder touches every path the folder could hold.
//!
//! The glob is taken segment by segment (`**` crosses any number of segments, every other segment
//! matches one), and a path is walked through it as through an automaton: when a state is still
//! alive once the path's segments are used up, some path at or below it can match.

use globset::GlobMatcher;

use super::path::{compile_glob, is_match};

/// A path glob split at `/`, for [`Self::reaches`].
#[derive(Debug, Clone)]
pub(super) struct Beneath {
    /// `None` when the glob cannot be split into segments (an alternation holding `/`): such a
    /// glob is taken to reach below every path, which refuses more and never less.
    segments: Option<Vec<Segment>>,
}

#[derive(Debug, Clone)]
enum Segment {
    /// `**`: any number of segments, none included.
    Any,
    /// One segment matching this glob.
    One(GlobMatcher),
}

impl Beneath {
    /// Split the path glob `glob` (as the guest's root sees it: `secrets/**`, `**/*.env`).
    pub(super) fn new(glob: &str) -> Self {
        let segments = glob
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| match s {
                "**" => Some(Segment::Any),
                _ if has_unbalanced_braces(s) => None,
                _ => compile_glob(s, true).ok().map(Segment::One),
            })
            .collect();
        Self { segments }
    }

    /// Whether the glob matches `guest` (a guest path, `""` for the root) or a path below it.
    pub(super) fn reaches(&self, guest: &str) -> bool {
        let Some(segments) = &self.segments else {
            return true;
        };
        // The states: how many of the glob's segments have been matched so far.
        let mut states = vec![false; segments.len() + 1];
        states[0] = true;
        close(segments, &mut states);
        for part in guest.split('/').filter(|s| !s.is_empty()) {
            let mut next = vec![false; segments.len() + 1];
            for (i, alive) in states.iter().enumerate() {
                if !alive || i == segments.len() {
                    continue;
                }
                match &segments[i] {
                    Segment::Any => next[i] = true,
                    Segment::One(glob) if is_match(glob, part) => next[i + 1] = true,
                    Segment::One(_) => {}
                }
            }
            close(segments, &mut next);
            if !next.contains(&true) {
                return false;
            }
            states = next;
        }
        states.contains(&true)
    }
}

/// `**` may match no segment: a state before one is also a state after it.
fn close(segments: &[Segment], states: &mut [bool]) {
    for i in 0..segments.len() {
        if states[i] && matches!(segments[i], Segment::Any) {
            states[i + 1] = true;
        }
    }
}

/// A segment cut from an alternation that held a `/` (`{a,b/c}` splits into `{a,b` and `c}`).
fn has_unbalanced_braces(segment: &str) -> bool {
    let mut depth = 0i32;
    let mut escaped = false;
    for c in segment.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    depth != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_reaches_what_it_could_hold() {
        let git = Beneath::new(".git/**");
        for path in ["", ".git", ".git/hooks", ".git/hooks/pre-commit"] {
            assert!(git.reaches(path), "{path}");
        }
        for path in ["src", ".github", "x/.git"] {
            assert!(!git.reaches(path), "{path}");
        }
        let deep = Beneath::new("a/*/keys/**");
        assert!(deep.reaches("a"));
        assert!(deep.reaches("a/foo"));
        assert!(deep.reaches("a/foo/keys/k"));
        assert!(!deep.reaches("a/foo/other"));
        assert!(!deep.reaches("b"));
        let env = Beneath::new("**/*.env");
        assert!(env.reaches("any/where"));
        let exact = Beneath::new("config/prod.env");
        assert!(exact.reaches("config"));
        assert!(exact.reaches("config/prod.env"));
        assert!(!exact.reaches("config/prod.env/x"));
        assert!(!exact.reaches("config/dev.env"));
    }

    #[test]
    fn an_unsplittable_glob_reaches_everything() {
        assert!(Beneath::new("{a,b/c}/**").reaches("zzz"));
        assert!(Beneath::new("{a,b}/**").reaches("a/x"));
        assert!(!Beneath::new("{a,b}/**").reaches("c"));
    }
}
