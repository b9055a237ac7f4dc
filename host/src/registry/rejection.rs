//! Why a plugin file is not served: a typed error per stage of loading, with its cause. Operators
//! see it as one sentence ([`Rejection::reason`]: `list`, the log, `/health`); models never see it.

use std::error::Error as _;

use crate::distribution::SourceError;
use crate::sandbox::{RunError, SandboxError};

/// What stopped a plugin file from loading.
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    /// The file could not be read.
    #[error("cannot read")]
    Read(#[source] std::io::Error),
    /// The file is larger than any plugin may be.
    #[error("the file is {len} bytes; the limit is {limit}")]
    TooLarge {
        /// Its size.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// A sourced plugin is not pulled, or its pulled bytes or signatures do not check out.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The lockfile cannot be read, so no sourced plugin loads.
    #[error("{0}")]
    Lock(String),
    /// The component could not be compiled or does not fit the contract.
    #[error(transparent)]
    Component(#[from] SandboxError),
    /// Its `describe` export did not answer.
    #[error("describe {0}")]
    Describe(RunError),
    /// What it declared was refused: names, schemas, sizes, subjects.
    #[error(transparent)]
    Declaration(#[from] DeclarationError),
    /// A loading task of the host failed (a bug; the plugin may be fine).
    #[error("{stage} crashed")]
    Crashed {
        /// Which stage: the compiler, the schema check.
        stage: &'static str,
        /// The task's failure.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// A declared tool spec the registry refuses, with a message naming the tool and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DeclarationError(pub(crate) String);

impl Rejection {
    /// The rejection and its causes, as one line: `cannot read: No such file or directory`.
    pub fn reason(&self) -> String {
        let mut text = self.to_string();
        let mut cause = self.source();
        // `transparent` variants show their source's text already: do not repeat it.
        if matches!(self, Self::Component(_) | Self::Declaration(_)) {
            cause = cause.and_then(|c| c.source());
        }
        while let Some(c) = cause {
            text.push_str(": ");
            text.push_str(&c.to_string());
            cause = c.source();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_joins_the_causes() {
        let e = Rejection::Read(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.reason(), "cannot read: entity not found");
        let e = Rejection::Describe(RunError::Timeout(std::time::Duration::from_millis(300)));
        assert_eq!(e.reason(), "describe timed out after 300 ms");
        let e = Rejection::from(DeclarationError("tool 'x' is declared twice".into()));
        assert_eq!(e.reason(), "tool 'x' is declared twice");
    }
}
