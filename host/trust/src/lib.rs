//! Where plugins come from and whom to trust: plugin sources and content digests ([`source`]), the
//! OCI artifact and signature manifests ([`oci`]), which signatures are trusted, cosign keys and
//! Sigstore bundles ([`trust`]), and the lockfile that pins every pulled plugin ([`lock`]).
//!
//! Pure: no wasmtime, no MCP, no async runtime, no network. The host fetches the bytes; this crate
//! parses and checks them.

#![forbid(unsafe_code)]

pub mod lock;
pub mod oci;
pub mod source;
pub mod trust;
