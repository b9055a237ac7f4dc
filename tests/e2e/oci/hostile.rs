//! A hostile registry: a std-only HTTP server thread on 127.0.0.1 whose answers are larger than
//! anything toolhost should hold, announced by `Content-Length` or streamed chunked without end.
//! It counts the bytes it manages to send, so a test can tell whether `pull`, `push` or `sign`
//! stopped reading. Uploads (`POST` and `PUT`) are refused with an endless error answer; `HEAD`
//! finds no blob.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The most a hostile answer sends before giving up: far more than any limit, far less than the
/// machine's memory, so that a client without bounds is caught without being run out of memory.
pub(crate) const HOSTILE_CAP: u64 = 256 << 20;
const CHUNK: usize = 64 << 10;

/// How the server answers a manifest or blob request.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Flood {
    /// Claims a 1 GiB `Content-Length`, then sends until the client goes (or the cap).
    Claimed,
    /// Chunked, without end (up to the cap).
    Chunked,
}

/// A server answering `/v2/<repo>/manifests/<ref>` with `manifest` (a flood when `None`), every
/// blob with a flood, and every upload with a flood under `500 Internal Server Error`.
pub(crate) struct HostileRegistry {
    /// `127.0.0.1:PORT`.
    pub(crate) addr: String,
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HostileRegistry {
    pub(crate) fn start(flood: Flood, manifest: Option<String>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let sent = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (sent, stop) = (sent.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((conn, _)) => {
                            let (sent, manifest) = (sent.clone(), manifest.clone());
                            std::thread::spawn(move || serve(conn, flood, manifest, &sent));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Self {
            addr,
            sent,
            stop,
            thread: Some(thread),
        }
    }

    /// Bytes of flood written to sockets so far (what the kernel accepted: the client's reads plus
    /// the buffers between).
    pub(crate) fn sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

impl Drop for HostileRegistry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(conn: TcpStream, flood: Flood, manifest: Option<String>, sent: &AtomicU64) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut writer = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let method = line.split(' ').next().unwrap_or_default().to_owned();
        let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                break;
            }
        }
        if method == "HEAD" {
            let none = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
            if writer.write_all(none.as_bytes()).is_err() {
                return;
            }
            continue;
        }
        if method == "POST" || method == "PUT" {
            // The request's body is never read: the answer floods, then the connection is closed.
            return send_flood(writer, flood, "500 Internal Server Error", sent);
        }
        match (&manifest, path.contains("/manifests/")) {
            (Some(m), true) => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
                     Content-Length: {}\r\n\r\n{m}",
                    m.len()
                );
                if writer.write_all(head.as_bytes()).is_err() {
                    return;
                }
            }
            _ if path.contains("/manifests/") || path.contains("/blobs/") => {
                return send_flood(writer, flood, "200 OK", sent);
            }
            _ => {
                let ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
                if writer.write_all(ok.as_bytes()).is_err() {
                    return;
                }
            }
        }
    }
}

/// Send the flood under `status` until the client stops reading or the cap is reached.
fn send_flood(mut writer: TcpStream, flood: Flood, status: &str, sent: &AtomicU64) {
    let head = match flood {
        Flood::Claimed => format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
             Content-Length: {}\r\n\r\n",
            1u64 << 30
        ),
        Flood::Chunked => format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n\
             Transfer-Encoding: chunked\r\n\r\n"
        ),
    };
    if writer.write_all(head.as_bytes()).is_err() {
        return;
    }
    let data = vec![b' '; CHUNK];
    let mut total = 0u64;
    while total < HOSTILE_CAP {
        let ok = match flood {
            Flood::Claimed => writer.write_all(&data),
            Flood::Chunked => writer
                .write_all(format!("{CHUNK:x}\r\n").as_bytes())
                .and_then(|()| writer.write_all(&data))
                .and_then(|()| writer.write_all(b"\r\n")),
        };
        if ok.is_err() {
            return;
        }
        total += CHUNK as u64;
        sent.fetch_add(CHUNK as u64, Ordering::SeqCst);
    }
}
