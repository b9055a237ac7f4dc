//! Why a command failed, as a type, and the exit code each failure maps to: decided here, in one
//! `match`, never at the call site.
//!
//! Exit codes: 0 success, and also a reader that closed our stdout early (`toolhost list | head`:
//! it has what it wanted); 1 the call ran and returned an error result (or a plugin was rejected,
//! for `inspect`; a normal exit, not a failure); 2 bad usage, configuration or input; 3 anything
//! else (I/O, the plugins folder, the audit log, a registry, the transports).

use std::io::ErrorKind;

use toolhost::host::HostError;
use toolhost::registry::RegistryError;
use toolhost::server::ServeError;
use toolhost_config::config::ConfigError;

/// A command that could not do its work.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// Flags that contradict each other or the config.
    #[error("{0}")]
    Usage(String),
    /// The config file or a flag's value.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// An input the user named (a file, stdin) cannot be read.
    #[error("cannot read {what}")]
    Read {
        /// What was read.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The call's input is not JSON.
    #[error("the input is not valid JSON")]
    Json(#[source] serde_json::Error),
    /// The message on stdin holds no batch.
    #[error(transparent)]
    Batch(#[from] toolhost::batch::ParseError),
    /// The stream on stdin is not a model's streaming response.
    #[error("cannot read the stream on stdin")]
    Stream(#[source] toolhost::batch::stream::StreamError),
    /// The WIT (or the component) given to `doc` does not fit.
    #[error(transparent)]
    Docs(#[from] toolhost::scaffold::DocsError),
    /// `new`: a bad name or directory, or the files cannot be written.
    #[error(transparent)]
    Scaffold(#[from] toolhost::scaffold::ScaffoldError),
    /// `push`/`sign`: the target is not an `oci://` reference.
    #[error(transparent)]
    Target(#[from] toolhost_trust::source::SourceError),
    /// `sign`: the key is not a usable private key.
    #[error(transparent)]
    Key(#[from] toolhost_trust::trust::KeyError),
    /// A registry, the local store or the lockfile failed.
    #[error(transparent)]
    Distribution(#[from] toolhost::distribution::SourceError),
    /// The audit log cannot be read.
    #[error(transparent)]
    AuditLog(#[from] toolhost::audit::ReadError),
    /// `grant`/`revoke`: the edit cannot be made to the policy file as it is.
    #[error(transparent)]
    Edit(#[from] toolhost_config::config::edit::EditError),
    /// `grant`/`revoke`: the edited policy file would not start; nothing was written.
    #[error("not written: {0}")]
    Refused(String),
    /// The host could not be opened.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The daemon could not run.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// `console-link`: the daemon did not mint a link.
    #[error("no sign-in link from {0}")]
    Link(String),
    /// A file the command writes (not stdout).
    #[error("cannot write {what}")]
    Write {
        /// The file.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A result cannot be rendered as JSON.
    #[error("cannot render the result as JSON")]
    Render(#[source] serde_json::Error),
    /// Stdout: the results cannot be written (a closed pipe among the reasons).
    #[error("cannot write to stdout")]
    Stdout(#[from] std::io::Error),
}

impl Failure {
    /// The process's exit code for this failure; 0 when stdout's reader went away, which is not
    /// worth a message either.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Stdout(e) if e.kind() == ErrorKind::BrokenPipe => 0,
            Self::Usage(_)
            | Self::Config(_)
            | Self::Read { .. }
            | Self::Json(_)
            | Self::Batch(_)
            | Self::Stream(_)
            | Self::Docs(_)
            | Self::Target(_)
            | Self::Key(_)
            | Self::Edit(_)
            | Self::Refused(_)
            | Self::Host(
                HostError::Telemetry(_)
                | HostError::State(_)
                | HostError::Registry(RegistryError::UnknownSections(_)),
            ) => 2,
            Self::Scaffold(e) => match e {
                toolhost::scaffold::ScaffoldError::Io { .. } => 3,
                _ => 2,
            },
            Self::Distribution(_)
            | Self::AuditLog(_)
            | Self::Host(_)
            | Self::Serve(_)
            | Self::Link(_)
            | Self::Write { .. }
            | Self::Render(_)
            | Self::Stdout(_) => 3,
        }
    }
}

/// A usage failure from a message.
pub(crate) fn usage(message: impl Into<String>) -> Failure {
    Failure::Usage(message.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_stdout_exits_0_and_other_write_errors_exit_3() {
        let closed = Failure::from(std::io::Error::from(ErrorKind::BrokenPipe));
        assert_eq!(closed.exit_code(), 0);
        let full = Failure::from(std::io::Error::from(ErrorKind::StorageFull));
        assert_eq!(full.exit_code(), 3);
    }

    #[test]
    fn bad_input_exits_2() {
        let bad = serde_json::from_str::<serde_json::Value>("{").unwrap_err();
        assert_eq!(Failure::Json(bad).exit_code(), 2);
        assert_eq!(usage("no").exit_code(), 2);
    }
}
