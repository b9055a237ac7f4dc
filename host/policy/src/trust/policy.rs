//! `[trust]` resolved: which keys vouch for which registry or repository prefix, and whether a
//! signature is required there. The longest matching prefix decides; once any key is configured, an
//! `oci://` source that no entry covers must be signed (and cannot be, so it is refused with what
//! to configure).

use super::PublicKey;

/// One `[trust."PREFIX"]` entry.
#[derive(Debug, Clone)]
pub struct TrustEntry {
    /// `REGISTRY` or `REGISTRY/REPOSITORY-PREFIX`, matched on path components.
    pub prefix: String,
    /// The keys whose signatures are accepted.
    pub keys: Vec<PublicKey>,
    /// Whether an artifact without a valid signature by one of them is refused.
    pub require_signature: bool,
}

/// Every `[trust]` entry.
#[derive(Debug, Clone, Default)]
pub struct TrustPolicy {
    /// Longest prefix first, so the first match is the most specific.
    entries: Vec<TrustEntry>,
}

/// What an artifact of one repository must show.
#[derive(Debug, Clone, Copy)]
pub struct Requirement<'a> {
    /// The entry that applies, if any.
    pub prefix: Option<&'a str>,
    /// The keys its signatures are verified against.
    pub keys: &'a [PublicKey],
    /// Whether a valid signature is required.
    pub required: bool,
}

impl TrustPolicy {
    /// The policy of these entries.
    pub fn new(mut entries: Vec<TrustEntry>) -> Self {
        entries.sort_by_key(|e| std::cmp::Reverse(e.prefix.len()));
        Self { entries }
    }

    /// Whether no key is configured at all (then signatures are neither checked nor required).
    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(|e| e.keys.is_empty())
    }

    /// What an artifact of `repository` (`REGISTRY/REPOSITORY`) must show.
    pub fn requirement(&self, repository: &str) -> Requirement<'_> {
        let matched = self.entries.iter().find(|e| {
            repository == e.prefix
                || repository
                    .strip_prefix(e.prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        match matched {
            Some(e) => Requirement {
                prefix: Some(&e.prefix),
                keys: &e.keys,
                required: e.require_signature,
            },
            None => Requirement {
                prefix: None,
                keys: &[],
                required: !self.is_empty(),
            },
        }
    }

    /// Every entry, most specific first.
    pub fn entries(&self) -> &[TrustEntry] {
        &self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> PublicKey {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/golden/cosign")
            .join(name);
        PublicKey::from_pem(name, &std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn the_longest_prefix_on_a_component_boundary_decides() {
        let policy = TrustPolicy::new(vec![
            TrustEntry {
                prefix: "reg.example.com".into(),
                keys: vec![key("other.pub")],
                require_signature: true,
            },
            TrustEntry {
                prefix: "reg.example.com/tools".into(),
                keys: vec![key("trusted.pub")],
                require_signature: true,
            },
            TrustEntry {
                prefix: "127.0.0.1:5000/scratch".into(),
                keys: vec![],
                require_signature: false,
            },
        ]);
        let r = policy.requirement("reg.example.com/tools/echo");
        assert_eq!(r.prefix, Some("reg.example.com/tools"));
        assert_eq!(r.keys[0].name(), "trusted.pub");
        // "tools-extra" is not under "tools".
        let r = policy.requirement("reg.example.com/tools-extra/echo");
        assert_eq!(r.prefix, Some("reg.example.com"));
        let r = policy.requirement("127.0.0.1:5000/scratch/echo");
        assert!(!r.required && r.keys.is_empty());
        // Keys are configured, so what no entry covers must be signed, by no key: refused.
        let r = policy.requirement("ghcr.io/someone/tool");
        assert!(r.required && r.keys.is_empty() && r.prefix.is_none());
        // No keys anywhere: nothing is checked.
        let none = TrustPolicy::default();
        assert!(!none.requirement("ghcr.io/someone/tool").required);
    }
}
