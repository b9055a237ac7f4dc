//! A valid plugin whose `connect` tool opens a TCP connection, so the component imports
//! `wasi:sockets`, which the host does not provide: loading it must fail clearly.

use std::net::TcpStream;

use contract::{Guest, ToolError, ToolOutput, ToolSpec, spec};

struct Plugin;

impl Guest for Plugin {
    fn describe() -> Vec<ToolSpec> {
        vec![spec(
            "connect",
            r#"{"type":"object","properties":{"addr":{"type":"string"}}}"#,
        )]
    }

    fn call(_name: String, input: String) -> Result<ToolOutput, ToolError> {
        // Crude on purpose: this fixture only exists for its imports.
        let addr = input.split('"').nth(3).unwrap_or("127.0.0.1:80").to_owned();
        match TcpStream::connect(&addr) {
            Ok(stream) => Ok(ToolOutput {
                content: format!("connected to {addr} from {:?}", stream.local_addr()),
                structured: None,
            }),
            Err(e) => Err(ToolError::Failed(format!("connect {addr}: {e}"))),
        }
    }
}

contract::export!(Plugin with_types_in contract);
