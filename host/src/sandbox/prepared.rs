//! A plugin bound to its policy when it is loaded, so that a call adds only what is its own.

use std::sync::Arc;

use super::plugin::Plugin;
use super::state::Bound;
use toolhost_gate::grants::Limits;

/// What every call of one plugin shares, bound once at load: the compiled component (its
/// instance-pre), the plugin's name and limits, and each capability's binding of its grants
/// (secrets, dirs and env, network grant), made by [`Sandbox::prepare`](super::Sandbox::prepare).
pub struct Prepared {
    pub(crate) plugin: Plugin,
    pub(crate) name: Arc<str>,
    pub(crate) limits: Limits,
    pub(crate) bound: Bound,
}
