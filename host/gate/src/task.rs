//! Long-running calls as tasks: whether a tool runs as one, the states a task goes through, and
//! whose it is. The host keeps the records ([`TaskStatus`] is what it stores); the rules live here.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::caller::Caller;

/// Whether a plugin's tools run as tasks (`[plugins.NAME] task`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskSupport {
    /// Always answered inline.
    Never,
    /// A task when the client can follow one, inline otherwise.
    Optional,
    /// Only as a task: a client that cannot follow one is told so.
    Required,
}

/// Calls allowed longer than this are worth running as tasks when nothing is configured.
pub const TASK_WORTHY: Duration = Duration::from_secs(60);

impl TaskSupport {
    /// The default for a plugin whose calls may run for `timeout`: a tool that may take minutes is
    /// offered as a task, a quick one answers inline.
    pub fn default_for(timeout: Duration) -> Self {
        if timeout > TASK_WORTHY {
            Self::Optional
        } else {
            Self::Never
        }
    }

    /// How MCP 2025-11-25 spells it in a tool's `execution.taskSupport`.
    pub fn as_mcp(self) -> &'static str {
        match self {
            Self::Never => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

/// How one `tools/call` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskChoice {
    /// Answered in the response.
    Inline,
    /// Answered with a task at once; the result is fetched later.
    Task,
    /// Refused: the tool needs a task and the client cannot follow one, or the client asked for a
    /// task the tool does not offer.
    Refuse,
}

impl TaskSupport {
    /// MCP 2025-11-25: the client asks for a task (`task` in the call's params); a tool answers
    /// only as its `taskSupport` says.
    pub fn asked(self, task_requested: bool) -> TaskChoice {
        match (self, task_requested) {
            (Self::Never, true) | (Self::Required, false) => TaskChoice::Refuse,
            (_, true) => TaskChoice::Task,
            (_, false) => TaskChoice::Inline,
        }
    }

    /// The 2026 tasks extension: the server decides, for a client that declared the extension.
    pub fn offered(self, client_declared: bool) -> TaskChoice {
        match (self, client_declared) {
            (Self::Never, _) | (Self::Optional, false) => TaskChoice::Inline,
            (_, true) => TaskChoice::Task,
            (Self::Required, false) => TaskChoice::Refuse,
        }
    }
}

/// Where a task is in its life. The last three are terminal: nothing changes a task after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's answer (an approval).
    InputRequired,
    /// Finished with a result (which may be a tool error).
    Completed,
    /// Ended without a result: a protocol error, or the daemon running it stopped.
    Failed,
    /// Cancelled by its owner, or by shutdown.
    Cancelled,
}

impl TaskStatus {
    /// Every status, terminal last.
    pub const ALL: [Self; 5] = [
        Self::Working,
        Self::InputRequired,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
    ];

    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The wire and storage spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status string that is not one of [`TaskStatus::ALL`].
#[derive(Debug, thiserror::Error)]
#[error("unknown task status {0:?}")]
pub struct UnknownStatus(pub String);

impl FromStr for TaskStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

/// Whose a task is: only the same owner may read, list or cancel it. An authenticated caller is
/// its issuer and subject (whichever client it used); everyone else shares `local` (stdio, and
/// HTTP without tokens, where any client is the operator).
pub fn owner_of(caller: Option<&Caller>) -> String {
    match caller {
        Some(c) => format!("{}#{}", c.issuer, c.subject),
        None => "local".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tools_default_to_optional_tasks() {
        assert_eq!(
            TaskSupport::default_for(Duration::from_secs(60)),
            TaskSupport::Never
        );
        assert_eq!(
            TaskSupport::default_for(Duration::from_secs(61)),
            TaskSupport::Optional
        );
    }

    #[test]
    fn each_era_decides_as_its_specification_says() {
        use TaskChoice::*;
        use TaskSupport::*;
        let asked = [
            (Never, false, Inline),
            (Never, true, Refuse),
            (Optional, false, Inline),
            (Optional, true, Task),
            (Required, false, Refuse),
            (Required, true, Task),
        ];
        for (support, requested, want) in asked {
            assert_eq!(support.asked(requested), want, "{support:?} {requested}");
        }
        let offered = [
            (Never, true, Inline),
            (Optional, false, Inline),
            (Optional, true, Task),
            (Required, false, Refuse),
            (Required, true, Task),
        ];
        for (support, declared, want) in offered {
            assert_eq!(support.offered(declared), want, "{support:?} {declared}");
        }
    }

    #[test]
    fn statuses_round_trip_and_only_ends_are_terminal() {
        for s in TaskStatus::ALL {
            assert_eq!(s.as_str().parse::<TaskStatus>().unwrap(), s);
            assert_eq!(
                serde_json::to_value(s).unwrap(),
                serde_json::json!(s.as_str())
            );
        }
        assert!(!TaskStatus::Working.is_terminal());
        assert!(!TaskStatus::InputRequired.is_terminal());
        assert!(TaskStatus::Cancelled.is_terminal());
        assert!("done".parse::<TaskStatus>().is_err());
    }

    #[test]
    fn owners_differ_by_issuer_and_subject_not_client() {
        let a = Caller {
            issuer: "https://idp".into(),
            subject: "alice".into(),
            client_id: Some("cli".into()),
            ..Caller::default()
        };
        let same = Caller {
            client_id: Some("web".into()),
            ..a.clone()
        };
        let other_issuer = Caller {
            issuer: "https://evil".into(),
            ..a.clone()
        };
        assert_eq!(owner_of(Some(&a)), owner_of(Some(&same)));
        assert_ne!(owner_of(Some(&a)), owner_of(Some(&other_issuer)));
        assert_ne!(owner_of(Some(&a)), owner_of(None));
    }
}
