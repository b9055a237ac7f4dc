//! `[console]`: the operator's web console, and where the gate's questions go.

use serde::Deserialize;

/// `[console]` as written, which needs no resolving.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConsoleOptions {
    /// Serve the console at `/console/` when HTTP is served. Default on.
    #[serde(default = "on")]
    pub enabled: bool,
    /// Where an `ask` question goes.
    #[serde(default)]
    pub approvals: ApprovalRoute,
    /// With `[auth]`: the OAuth client the browser signs in as (authorization code with PKCE,
    /// a public client), registered at the issuer with the redirect URI
    /// `<origin>/console/callback`.
    pub client_id: Option<String>,
    /// The redirect URI registered for that client; default `http://<Host>/console/callback`, from
    /// the request's (guarded) `Host`. Set it when TLS ends in front of the daemon.
    pub redirect_uri: Option<String>,
}

fn on() -> bool {
    true
}

impl Default for ConsoleOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            approvals: ApprovalRoute::default(),
            client_id: None,
            redirect_uri: None,
        }
    }
}

/// Who is asked to approve a call the gate answered with `ask`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalRoute {
    /// The calling client, through its elicitation support (a client without it gets a denial).
    Client,
    /// The console's operators only.
    Console,
    /// Both at once; the first answer wins.
    #[default]
    Both,
}

impl ApprovalRoute {
    /// Whether the client's own approver is asked.
    pub fn asks_client(self) -> bool {
        matches!(self, Self::Client | Self::Both)
    }

    /// Whether the console's operators are asked (when the console is served).
    pub fn asks_console(self) -> bool {
        matches!(self, Self::Console | Self::Both)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_on_and_both() {
        let c: ConsoleOptions = toml::from_str("").unwrap();
        assert!(c.enabled);
        assert_eq!(c.approvals, ApprovalRoute::Both);
        let c: ConsoleOptions = toml::from_str("enabled = false\napprovals = \"client\"").unwrap();
        assert!(!c.enabled && c.approvals.asks_client() && !c.approvals.asks_console());
        assert!(toml::from_str::<ConsoleOptions>("approvals = \"nobody\"").is_err());
    }
}
