//! An HTTPS file server for `https://` sources: Python's http.server behind TLS, with a leaf
//! certificate for 127.0.0.1 issued by a throw-away CA that openssl makes. toolhost trusts the CA only
//! through SSL_CERT_FILE, which the system verifier reads.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

const SERVER: &str = r#"
import http.server, ssl, sys, os, functools
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"#;

pub(crate) struct HttpsServer {
    child: Child,
    /// `https://127.0.0.1:PORT`.
    pub(crate) base: String,
    /// The CA that issued its certificate (PEM), for SSL_CERT_FILE.
    pub(crate) ca: PathBuf,
    /// The folder it serves.
    pub(crate) root: PathBuf,
    _dir: tempfile::TempDir,
}

impl HttpsServer {
    pub(crate) fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        crate::harness::loopback_certificates(d);
        let root = d.join("www");
        std::fs::create_dir(&root).unwrap();
        let mut child = Command::new("python3")
            .args(["-c", SERVER])
            .arg(&root)
            .arg(d.join("leaf.pem"))
            .arg(d.join("leaf.key"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line.trim().parse().expect("the server's port");
        Self {
            child,
            base: format!("https://127.0.0.1:{port}"),
            ca: d.join("ca.pem"),
            root,
            _dir: dir,
        }
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
