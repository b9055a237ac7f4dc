//! `toolhost doc`: put a WIT package's doc comments into a built component, as `package-docs`
//! custom sections, so that a generic plugin's tools carry their descriptions. The toolchains that
//! build components today (wit-bindgen, componentize-py, jco) drop the docs on the way; this puts
//! them back in wit-parser's own format, which toolhost reads wherever it sits in a component.

use std::path::Path;

use wit_parser::{PackageMetadata, Resolve};

// The section's name, as toolhost's reader expects it.
use toolhost_call::wit::DOCS_SECTION;

/// Why the docs could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    /// The file is not a WebAssembly component.
    #[error(
        "not a WebAssembly component (build it first; a core module needs `wasm-tools component new`)"
    )]
    NotComponent,
    /// The WIT could not be read.
    #[error("cannot read the WIT at {path}: {message}")]
    Wit {
        /// The file or directory.
        path: String,
        /// wit-parser's message.
        message: String,
    },
}

/// `component` with the doc comments of every package of the WIT at `wit` (a file or a directory
/// with its `deps/`) in front of its other sections, where they take precedence over any attached
/// before.
pub fn attach_docs(component: &[u8], wit: &Path) -> Result<Vec<u8>, DocsError> {
    let Some((header, rest)) = component.split_at_checked(8) else {
        return Err(DocsError::NotComponent);
    };
    if !matches!(header, [0, b'a', b's', b'm', _, _, 1, 0]) {
        return Err(DocsError::NotComponent);
    }
    let wit_error = |e: anyhow::Error| DocsError::Wit {
        path: wit.display().to_string(),
        message: format!("{e:#}"),
    };
    let mut resolve = Resolve::default();
    resolve.push_path(wit).map_err(wit_error)?;
    let mut out = header.to_vec();
    for (id, _) in resolve.packages.iter() {
        let data = PackageMetadata::extract(&resolve, id)
            .encode()
            .map_err(wit_error)?;
        custom_section(&mut out, DOCS_SECTION, &data);
    }
    out.extend_from_slice(rest);
    Ok(out)
}

/// Append a custom section (id 0: name, then data) to `out`.
fn custom_section(out: &mut Vec<u8>, name: &str, data: &[u8]) {
    let mut body = Vec::with_capacity(name.len() + data.len() + 5);
    leb128(&mut body, name.len());
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    out.push(0);
    leb128(out, body.len());
    out.extend_from_slice(&body);
}

fn leb128(out: &mut Vec<u8>, mut n: usize) {
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}
