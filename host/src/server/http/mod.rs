//! HTTP plumbing shared by every route: the Host and Origin [`guard`], bearer-token [`auth`], body
//! deadlines ([`body`]), the connection [`listener`], and toolhost's own `{"error": "..."}`
//! replies ([`reply`]). Imports only [`super::shared`]; knows no MCP and no batch API.

pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod guard;
pub(crate) mod listener;
pub(crate) mod reply;
