//! A plugin bound to its policy when it is loaded, so that a call adds only what is its own.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::engine::Sandbox;
use super::network::Binding;
use super::plugin::Plugin;
use toolhost_policy::call::ProgressSink;
use toolhost_policy::gate::PathGuard;
use toolhost_policy::grants::{Caps, Grants, Limits};

/// What every call of one plugin shares, bound once at load: the compiled component (its
/// instance-pre), the plugin's name, grants and limits, and its network binding (grant, secret
/// headers, the redactor of its secrets).
pub struct Prepared {
    pub(crate) plugin: Plugin,
    pub(crate) name: Arc<str>,
    pub(crate) grants: Grants,
    pub(crate) limits: Limits,
    pub(crate) network: Arc<Binding>,
}

/// What one call brings beyond its tool and input.
pub struct CallIo<'a> {
    /// The paths this tool's calls may never touch.
    pub files: Arc<PathGuard>,
    /// Where the plugin's progress reports go, if anywhere.
    pub progress: Option<ProgressSink>,
    /// Cancelled by the caller to stop the call.
    pub cancel: &'a CancellationToken,
    /// Lower limits for this call (a caller's profile).
    pub caps: Caps,
}

impl Sandbox {
    /// Bind `plugin` to its name, grants and limits, once, for all of its calls.
    pub fn prepare(&self, plugin: Plugin, name: &str, grants: Grants, limits: Limits) -> Prepared {
        let network = Arc::new(Binding::new(name, grants.network.as_ref(), &grants.secrets));
        Prepared {
            plugin,
            name: name.into(),
            grants,
            limits,
            network,
        }
    }
}
