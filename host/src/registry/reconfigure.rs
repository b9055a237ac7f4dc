//! A new policy file while serving (`toolhost grant`, or an edit by hand): read again and checked
//! as at start, then applied by binding again the plugins whose policy changed. A file that start
//! would refuse is refused here too, and the policy in force stays.

use std::sync::{Arc, PoisonError};

use toolhost_config::config::{Changes, ConfigError};

use super::{Registry, RegistryError, check_sections};

/// Why a new policy file was not applied; the policy in force stays.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file is not a valid configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// It names plugins that do not exist, or the plugins folder cannot be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// What applying a new policy file did.
#[derive(Debug)]
pub struct Reconfigured {
    /// What changed, and what waits for a restart.
    pub changes: Changes,
    /// Whether the served tools changed (a `tools/list_changed` was sent).
    pub tools_changed: bool,
}

impl Registry {
    /// Read the policy file again and apply its plugin policies: every plugin whose policy changed
    /// is loaded again (from the compile cache) and serves with the new one; until it has, calls
    /// to its tools wait for it, so no call that starts after this returns runs with a revoked
    /// grant. Calls already running keep the grants they started with.
    pub async fn reconfigure(&self) -> Result<Reconfigured, PolicyError> {
        let mut loaded = self.loaded.lock().await;
        let (next, changes) = self.config().reread()?;
        if changes.is_empty() {
            return Ok(Reconfigured {
                changes,
                tools_changed: false,
            });
        }
        check_sections(&next)?;
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        let tools_changed = self.reload_locked(&mut loaded, &changes.rebind).await?;
        Ok(Reconfigured {
            changes,
            tools_changed,
        })
    }
}
