//! A real local OAuth 2.1 / OpenID token issuer for the bearer-token tests, built only from tools
//! that are independent of the code under test: the `openssl` CLI makes the keys and signs the
//! tokens (no Rust JWT or crypto library), and a std-only HTTP server thread on 127.0.0.1 serves
//! the JWKS and the discovery documents. Dropping the [`Issuer`] stops the server and deletes the
//! keys. Every wait here is bounded: socket reads and writes have timeouts and `openssl` runs
//! under a deadline, so a misbehaving client or tool fails the test instead of hanging it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

mod exchange;

/// Longest a connection may take to send its request, and a response write may block.
const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request head the server reads before answering 400.
const MAX_REQUEST: usize = 16 * 1024;
/// How often the nonblocking accept loop looks for connections and for the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(5);
/// Longest one `openssl` invocation may run (RSA key generation is the slow one).
const OPENSSL_TIMEOUT: Duration = Duration::from_secs(60);

/// The JWS algorithm a token is signed with; it must match the type of the key used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256, for the RSA keys.
    Rs256,
    /// ECDSA on P-256 with SHA-256, for the EC keys.
    Es256,
}

impl Alg {
    /// The `alg` header value.
    fn name(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Es256 => "ES256",
        }
    }
}

/// A private key on disk and the algorithm it signs with.
struct Key {
    alg: Alg,
    pem: PathBuf,
}

/// What the server thread and the test share; guarded by [`Shared::state`].
struct State {
    /// Every key ever generated, by kid. Retired keys stay here so tests can still sign with them.
    keys: HashMap<String, Key>,
    /// The JWKs currently served at /jwks.json, in order.
    served: Vec<Value>,
    /// Opaque tokens the introspection endpoint knows, with their claims.
    opaque: HashMap<String, Value>,
    /// The access token the next person to sign in at /authorize gets (the test signs it).
    next_sign_in: Option<String>,
    /// Codes /authorize handed out and /token has not spent.
    codes: HashMap<String, Grant>,
    /// Every token signed here, with its claims: what /token accepts as a `subject_token`.
    signed: HashMap<String, Value>,
    /// Token exchanges answered, and the lifetime (`expires_in`) the next ones get.
    exchanges: usize,
    exchanged_life: u64,
}

/// What an authorization code stands for.
struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    token: String,
}

/// State shared between the [`Issuer`] handle and its server thread.
struct Shared {
    state: Mutex<State>,
    /// GET /jwks.json requests answered so far.
    fetches: AtomicUsize,
    /// Set on drop: the accept loop exits.
    stop: AtomicBool,
    /// "http://127.0.0.1:PORT".
    origin: String,
    /// Numbers the key files, so kids never have to be valid file names.
    files: AtomicUsize,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // A test that panicked elsewhere must not take the server down with a poisoned lock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running local token issuer (RSA key "rsa-1", EC key "ec-1") whose JWKS and discovery
/// documents the code under test fetches; dropping it stops the server and deletes the keys.
pub(crate) struct Issuer {
    shared: Arc<Shared>,
    server: Option<JoinHandle<()>>,
    /// Holds the private keys; declared last so it is deleted after the server thread is joined.
    dir: tempfile::TempDir,
}

impl Issuer {
    /// Starts the issuer: generates one RSA-2048 key (kid "rsa-1") and one EC P-256 key (kid
    /// "ec-1") with openssl and serves them as a JWKS on an ephemeral 127.0.0.1 port.
    pub(crate) fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("toolhost-issuer-")
            .tempdir()
            .expect("create the issuer's temp dir");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the issuer to 127.0.0.1:0");
        let port = listener.local_addr().expect("issuer local address").port();
        listener
            .set_nonblocking(true)
            .expect("make the issuer's listener nonblocking");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                keys: HashMap::new(),
                served: Vec::new(),
                opaque: HashMap::new(),
                next_sign_in: None,
                codes: HashMap::new(),
                signed: HashMap::new(),
                exchanges: 0,
                exchanged_life: 300,
            }),
            fetches: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            origin: format!("http://127.0.0.1:{port}"),
            files: AtomicUsize::new(0),
        });
        for (kid, alg) in [("rsa-1", Alg::Rs256), ("ec-1", Alg::Es256)] {
            let (key, jwk) = generate(dir.path(), &shared, kid, alg);
            let mut state = shared.state();
            state.keys.insert(kid.to_owned(), key);
            state.served.push(jwk);
        }
        let server = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("issuer-http".to_owned())
                .spawn(move || accept_loop(&listener, &shared))
                .expect("spawn the issuer's server thread")
        };
        Self {
            shared,
            server: Some(server),
            dir,
        }
    }

    /// "http://127.0.0.1:PORT": the issuer identifier tokens carry as `iss`.
    pub(crate) fn url(&self) -> String {
        self.shared.origin.clone()
    }

    /// "http://127.0.0.1:PORT/jwks.json": where the code under test fetches the public keys.
    pub(crate) fn jwks_url(&self) -> String {
        format!("{}/jwks.json", self.shared.origin)
    }

    /// Signs `claims` as a compact JWS with key `kid` and `alg` (which must match the key's
    /// type), header {"alg", "typ": "JWT", "kid"}: the ordinary valid token.
    pub(crate) fn sign(&self, kid: &str, alg: Alg, claims: &Value) -> String {
        let key_alg = self.key(kid).0;
        assert_eq!(key_alg, alg, "key {kid:?} signs {key_alg:?}, not {alg:?}");
        let header = json!({"alg": alg.name(), "typ": "JWT", "kid": kid});
        self.sign_with_header(kid, &header, claims)
    }

    /// Signs with key `key_kid` (RS256 for an RSA key, ES256 for an EC key) under an arbitrary
    /// `header`, which is not checked: for forgeries such as a kid that is not served or an `alg`
    /// that does not match the key.
    pub(crate) fn sign_with_header(&self, key_kid: &str, header: &Value, claims: &Value) -> String {
        let (alg, pem) = self.key(key_kid);
        let input = signing_input(header, claims);
        let signature = run(
            openssl(&["dgst", "-sha256", "-binary", "-sign"]).arg(&pem),
            Some(input.as_bytes()),
        );
        let signature = match alg {
            Alg::Rs256 => {
                assert_eq!(signature.len(), 256, "RSA-2048 signature length");
                signature
            }
            Alg::Es256 => der_to_raw(&signature)
                .unwrap_or_else(|e| panic!("openssl's ECDSA signature: {e}"))
                .to_vec(),
        };
        let token = format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature));
        self.shared
            .state()
            .signed
            .insert(token.clone(), claims.clone());
        token
    }

    /// An unsecured token, header {"alg":"none","typ":"JWT"} and an empty signature ("h.p."),
    /// which a validator must refuse.
    pub(crate) fn unsigned(&self, claims: &Value) -> String {
        let header = json!({"alg": "none", "typ": "JWT"});
        format!("{}.", signing_input(&header, claims))
    }

    /// The key-confusion forgery: header {"alg":"HS256","kid":"rsa-1"}, HMAC-SHA256 keyed with
    /// the bytes of rsa-1's public key PEM (SubjectPublicKeyInfo, as `openssl rsa -pubout` writes
    /// it), which a validator that lets the token pick the algorithm would accept.
    pub(crate) fn hs256_with_public_key(&self, claims: &Value) -> String {
        let (_, pem) = self.key("rsa-1");
        let public_pem = run(openssl(&["rsa", "-pubout", "-in"]).arg(&pem), None);
        let hex_key = hex(&public_pem);
        let header = json!({"alg": "HS256", "kid": "rsa-1"});
        let input = signing_input(&header, claims);
        let mac = run(
            openssl(&["dgst", "-sha256", "-binary", "-mac", "HMAC", "-macopt"])
                .arg(format!("hexkey:{hex_key}")),
            Some(input.as_bytes()),
        );
        assert_eq!(mac.len(), 32, "HMAC-SHA256 length");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(mac))
    }

    /// Key rotation: generates a new RSA key `new_kid` and serves it; with `retire_old`, stops
    /// serving every other RSA key (they can still sign, to make tokens the JWKS no longer covers).
    pub(crate) fn rotate(&self, new_kid: &str, retire_old: bool) {
        assert!(
            !self.shared.state().keys.contains_key(new_kid),
            "kid {new_kid:?} already exists"
        );
        let (key, jwk) = generate(self.dir.path(), &self.shared, new_kid, Alg::Rs256);
        let mut state = self.shared.state();
        state.keys.insert(new_kid.to_owned(), key);
        if retire_old {
            state.served.retain(|served| served["kty"] != "RSA");
        }
        state.served.push(jwk);
    }

    /// An opaque (non-JWT) access token with these claims, answered by POST /introspect (RFC 7662)
    /// to a client authenticating as [`INTROSPECTION_CLIENT`].
    pub(crate) fn opaque(&self, claims: &Value) -> String {
        let n = self.shared.files.fetch_add(1, Ordering::SeqCst);
        let token = format!("opaque-{n}-{}", now());
        self.shared
            .state()
            .opaque
            .insert(token.clone(), claims.clone());
        token
    }

    /// The person who signs in next at GET /authorize (the authorization code flow with PKCE)
    /// receives `token`: the test signs it with the claims it wants them to have.
    pub(crate) fn sign_in_next_as(&self, token: String) {
        self.shared.state().next_sign_in = Some(token);
    }

    /// "http://127.0.0.1:PORT/token": the token endpoint, also for token exchange (RFC 8693).
    pub(crate) fn token_url(&self) -> String {
        format!("{}/token", self.shared.origin)
    }

    /// How many token exchanges were answered.
    pub(crate) fn exchanges(&self) -> usize {
        self.shared.state().exchanges
    }

    /// "http://127.0.0.1:PORT/introspect"
    pub(crate) fn introspection_url(&self) -> String {
        format!("{}/introspect", self.shared.origin)
    }

    /// How many times GET /jwks.json was answered, so tests can assert caching and
    /// refresh-on-unknown-kid.
    pub(crate) fn jwks_fetches(&self) -> usize {
        self.shared.fetches.load(Ordering::SeqCst)
    }

    /// The algorithm and private key file of `kid`; panics on an unknown kid (a test bug).
    fn key(&self, kid: &str) -> (Alg, PathBuf) {
        let state = self.shared.state();
        let key = state
            .keys
            .get(kid)
            .unwrap_or_else(|| panic!("the issuer has no key {kid:?}"));
        (key.alg, key.pem.clone())
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(server) = self.server.take() {
            // The accept loop polls the flag every ACCEPT_POLL, so this returns promptly.
            let _ = server.join();
        }
    }
}

/// Seconds since the Unix epoch, for the `exp`, `nbf` and `iat` claims.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// "base64url(header).base64url(claims)".
fn signing_input(header: &Value, claims: &Value) -> String {
    let header = serde_json::to_vec(header).expect("serialize the JWS header");
    let claims = serde_json::to_vec(claims).expect("serialize the claims");
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

/// Generates a key of `alg`'s type in `dir` with openssl and returns it with its public JWK.
fn generate(dir: &Path, shared: &Shared, kid: &str, alg: Alg) -> (Key, Value) {
    let file = shared.files.fetch_add(1, Ordering::SeqCst);
    let pem = dir.join(format!("key-{file}.pem"));
    let jwk = match alg {
        Alg::Rs256 => {
            run(
                openssl(&[
                    "genpkey",
                    "-algorithm",
                    "RSA",
                    "-pkeyopt",
                    "rsa_keygen_bits:2048",
                    "-out",
                ])
                .arg(&pem),
                None,
            );
            let modulus = run(
                openssl(&["rsa", "-noout", "-modulus", "-in"]).arg(&pem),
                None,
            );
            let modulus = String::from_utf8(modulus).expect("openssl -modulus prints text");
            let modulus = modulus
                .trim()
                .strip_prefix("Modulus=")
                .unwrap_or_else(|| panic!("unexpected `openssl rsa -modulus` output {modulus:?}"));
            let n = strip_zeros(&unhex(modulus));
            assert_eq!(n.len(), 256, "RSA-2048 modulus length");
            let text = run(openssl(&["rsa", "-noout", "-text", "-in"]).arg(&pem), None);
            let e = public_exponent(&String::from_utf8_lossy(&text));
            json!({
                "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                "n": URL_SAFE_NO_PAD.encode(n),
                "e": URL_SAFE_NO_PAD.encode(strip_zeros(&e.to_be_bytes())),
            })
        }
        Alg::Es256 => {
            run(
                openssl(&[
                    "genpkey",
                    "-algorithm",
                    "EC",
                    "-pkeyopt",
                    "ec_paramgen_curve:P-256",
                    "-out",
                ])
                .arg(&pem),
                None,
            );
            let spki = run(
                openssl(&["ec", "-pubout", "-outform", "DER", "-in"]).arg(&pem),
                None,
            );
            // SubjectPublicKeyInfo ends with the BIT STRING's uncompressed point 04 || x || y.
            assert!(spki.len() > 65, "EC public key DER too short: {spki:02x?}");
            let point = &spki[spki.len() - 65..];
            assert_eq!(point[0], 0x04, "EC point is not uncompressed: {spki:02x?}");
            json!({
                "kty": "EC", "kid": kid, "use": "sig", "alg": "ES256", "crv": "P-256",
                "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                "y": URL_SAFE_NO_PAD.encode(&point[33..]),
            })
        }
    };
    (Key { alg, pem }, jwk)
}

/// The "publicExponent: 65537 (0x10001)" line of `openssl rsa -text`.
fn public_exponent(text: &str) -> u64 {
    let line = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("publicExponent:"))
        .unwrap_or_else(|| panic!("no publicExponent in `openssl rsa -text` output"));
    let decimal = line.split_whitespace().next().unwrap_or_default();
    decimal
        .parse()
        .unwrap_or_else(|_| panic!("unparsable publicExponent line {line:?}"))
}

/// `bytes` without leading zero bytes (JWK integers are minimal big-endian).
fn strip_zeros(bytes: &[u8]) -> Vec<u8> {
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    bytes[first..].to_vec()
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Decodes hex as openssl prints it (either case; an odd length gets a leading zero nibble).
fn unhex(hex: &str) -> Vec<u8> {
    let padded = if hex.len() % 2 == 1 {
        format!("0{hex}")
    } else {
        hex.to_owned()
    };
    padded
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            let pair = std::str::from_utf8(pair).expect("hex is ASCII");
            u8::from_str_radix(pair, 16).unwrap_or_else(|_| panic!("bad hex {hex:?}"))
        })
        .collect()
}

/// Converts openssl's DER ECDSA signature, SEQUENCE { INTEGER r, INTEGER s }, to the JWS form:
/// r || s, each a 32-byte big-endian number (RFC 7518 section 3.4).
fn der_to_raw(der: &[u8]) -> Result<[u8; 64], String> {
    let (tag, body, rest) = der_tlv(der)?;
    if tag != 0x30 || !rest.is_empty() {
        return Err(format!("not one DER SEQUENCE: {der:02x?}"));
    }
    let (tag_r, r, rest) = der_tlv(body)?;
    let (tag_s, s, rest) = der_tlv(rest)?;
    if tag_r != 0x02 || tag_s != 0x02 || !rest.is_empty() {
        return Err(format!("not SEQUENCE {{ INTEGER, INTEGER }}: {der:02x?}"));
    }
    let mut raw = [0; 64];
    raw[..32].copy_from_slice(&integer_32(r)?);
    raw[32..].copy_from_slice(&integer_32(s)?);
    Ok(raw)
}

/// Splits one DER tag-length-value off `input`: (tag, value, rest). Short-form lengths and the
/// one-byte long form (0x81) only, which covers every P-256 signature.
fn der_tlv(input: &[u8]) -> Result<(u8, &[u8], &[u8]), String> {
    let [tag, first, rest @ ..] = input else {
        return Err(format!("truncated DER: {input:02x?}"));
    };
    let (len, rest) = match *first {
        short @ 0..=0x7f => (usize::from(short), rest),
        0x81 => match rest {
            [len, rest @ ..] => (usize::from(*len), rest),
            [] => return Err(format!("truncated DER length: {input:02x?}")),
        },
        other => return Err(format!("unsupported DER length byte {other:#04x}")),
    };
    if rest.len() < len {
        return Err(format!("DER value longer than its input: {input:02x?}"));
    }
    let (value, rest) = rest.split_at(len);
    Ok((*tag, value, rest))
}

/// A positive DER INTEGER's content octets as a 32-byte big-endian number: leading zero bytes
/// stripped (DER adds one when the top bit is set), then left-padded with zeros.
fn integer_32(int: &[u8]) -> Result<[u8; 32], String> {
    match int.first() {
        None => return Err("empty DER INTEGER".to_owned()),
        Some(b) if b & 0x80 != 0 => return Err(format!("negative DER INTEGER {int:02x?}")),
        Some(_) => {}
    }
    let digits = &int[int.iter().position(|&b| b != 0).unwrap_or(int.len())..];
    if digits.len() > 32 {
        return Err(format!("DER INTEGER wider than 32 bytes: {int:02x?}"));
    }
    let mut out = [0; 32];
    out[32 - digits.len()..].copy_from_slice(digits);
    Ok(out)
}

/// An `openssl` command with `args`; add path arguments with `.arg`.
fn openssl(args: &[&str]) -> Command {
    let mut command = Command::new("openssl");
    command.args(args);
    command
}

/// Runs `command` with `input` on stdin and returns its stdout; panics (with stderr) on failure
/// and kills it after OPENSSL_TIMEOUT.
fn run(command: &mut Command, input: Option<&[u8]>) -> Vec<u8> {
    let shown = format!("{command:?}");
    let mut child = command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {shown} (is openssl installed?): {e}"));
    // Feed stdin and drain stdout and stderr on their own threads, so no pipe can fill and block.
    let stdin = child.stdin.take();
    let input = input.map(<[u8]>::to_vec);
    let writer = std::thread::spawn(move || {
        if let (Some(mut stdin), Some(input)) = (stdin, input) {
            let _ = stdin.write_all(&input);
        }
    });
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + OPENSSL_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{shown} ran longer than {OPENSSL_TIMEOUT:?}");
            }
            Err(e) => panic!("wait for {shown}: {e}"),
        }
    };
    let _ = writer.join();
    let stdout = stdout.join().expect("stdout reader");
    let stderr = stderr.join().expect("stderr reader");
    assert!(
        status.success(),
        "{shown} failed ({status}): {}",
        String::from_utf8_lossy(&stderr)
    );
    stdout
}

/// The server thread: accepts until the stop flag is set, one short-lived thread per connection.
fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let shared = Arc::clone(shared);
                std::thread::spawn(move || {
                    let _ = handle(stream, &shared);
                });
            }
            // WouldBlock: nothing pending. Other errors (e.g. a connection reset before accept)
            // are transient; both just poll again (the poll interval of a non-blocking accept).
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
}

/// Reads one request head (bounded in size and time), answers it and closes the connection.
fn handle(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let deadline = Instant::now() + IO_TIMEOUT;
    let mut head = Vec::new();
    let mut chunk = [0; 2048];
    let end = loop {
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        if head.len() > MAX_REQUEST || Instant::now() > deadline {
            return respond(
                &mut stream,
                "400 Bad Request",
                &json!({"error": "bad_request"}),
            );
        }
        match stream.read(&mut chunk)? {
            0 => return Ok(()),
            n => head.extend_from_slice(&chunk[..n]),
        }
    };
    let rest = head[end + 4..].to_vec();
    let head = String::from_utf8_lossy(&head[..end]);
    let mut request_line = head.lines().next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default();
    let target = request_line.next().unwrap_or_default();
    let path = target.split(['?', '#']).next().unwrap_or_default();
    if method == "POST" && path == "/introspect" {
        return introspect(&mut stream, shared, &head, &rest);
    }
    if method == "POST" && path == "/token" {
        let body = read_body(&mut stream, &head, &rest)?;
        if form(&body).get("grant_type").map(String::as_str) == Some(exchange::GRANT) {
            return exchange::answer(&mut stream, shared, &head, &body);
        }
        return token(&mut stream, shared, &body);
    }
    if method == "GET" && path == "/authorize" {
        return authorize(&mut stream, shared, target);
    }
    if method != "GET" {
        return respond(
            &mut stream,
            "405 Method Not Allowed",
            &json!({"error": "method_not_allowed"}),
        );
    }
    match path {
        "/jwks.json" => {
            let keys = shared.state().served.clone();
            // Counted before answering, so a client that has the response sees the new count.
            shared.fetches.fetch_add(1, Ordering::SeqCst);
            respond(&mut stream, "200 OK", &json!({"keys": keys}))
        }
        "/.well-known/openid-configuration" | "/.well-known/oauth-authorization-server" => {
            let origin = &shared.origin;
            let discovery = json!({
                "issuer": origin,
                "jwks_uri": format!("{origin}/jwks.json"),
                "token_endpoint": format!("{origin}/token"),
                "authorization_endpoint": format!("{origin}/authorize"),
                "code_challenge_methods_supported": ["S256"],
                "response_types_supported": ["code"],
                "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            });
            respond(&mut stream, "200 OK", &discovery)
        }
        _ => respond(&mut stream, "404 Not Found", &json!({"error": "not_found"})),
    }
}

/// The client the introspection and token exchange endpoints accept (HTTP Basic), and its secret.
pub(crate) const INTROSPECTION_CLIENT: (&str, &str) = ("toolhost", "introspect-secret");

/// POST /introspect: `token=…` in a form body, the client by Basic auth; `{"active": …}`.
fn introspect(
    stream: &mut TcpStream,
    shared: &Shared,
    head: &str,
    read: &[u8],
) -> std::io::Result<()> {
    use base64::Engine as _;
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let expected = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        INTROSPECTION_CLIENT.0, INTROSPECTION_CLIENT.1
    ));
    if header("authorization") != Some(format!("Basic {expected}")) {
        return respond(
            stream,
            "401 Unauthorized",
            &json!({"error": "invalid_client"}),
        );
    }
    let body = read_body(stream, head, read)?;
    let token = body
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .unwrap_or_default()
        .replace("%2D", "-");
    let answer = match shared.state().opaque.get(&token) {
        Some(claims) => {
            let mut a = claims.clone();
            a["active"] = json!(true);
            a
        }
        None => json!({"active": false}),
    };
    respond(stream, "200 OK", &answer)
}

/// The form fields of a query string or a form body.
fn form(text: &str) -> HashMap<String, String> {
    serde_urlencoded::from_str(text).unwrap_or_default()
}

/// The request body after the head (`read` is what came with it), by its Content-Length.
fn read_body(stream: &mut TcpStream, head: &str, read: &[u8]) -> std::io::Result<String> {
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
        .min(MAX_REQUEST);
    let mut body = read[..read.len().min(len)].to_vec();
    let mut more = vec![0; len - body.len()];
    stream.read_exact(&mut more)?;
    body.extend_from_slice(&more);
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// GET /authorize: the person consents at once (the test chose who they are); PKCE with S256 is
/// required. Redirects back with a one-time code and the client's `state`.
fn authorize(stream: &mut TcpStream, shared: &Shared, target: &str) -> std::io::Result<()> {
    let q = form(target.split_once('?').map_or("", |(_, q)| q));
    let field = |k: &str| q.get(k).cloned().unwrap_or_default();
    if field("response_type") != "code" || field("code_challenge_method") != "S256" {
        return respond(
            stream,
            "400 Bad Request",
            &json!({"error": "invalid_request"}),
        );
    }
    let mut state = shared.state();
    let Some(token) = state.next_sign_in.take() else {
        return respond(stream, "403 Forbidden", &json!({"error": "access_denied"}));
    };
    let code = format!(
        "code-{}-{}",
        shared.files.fetch_add(1, Ordering::SeqCst),
        now()
    );
    state.codes.insert(
        code.clone(),
        Grant {
            client_id: field("client_id"),
            redirect_uri: field("redirect_uri"),
            challenge: field("code_challenge"),
            token,
        },
    );
    drop(state);
    let back = serde_urlencoded::to_string([("code", code), ("state", field("state"))]).unwrap();
    let location = format!("{}?{back}", field("redirect_uri"));
    let response = format!(
        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(response.as_bytes())?;
    stream.flush()
}

/// POST /token: a code spent once, for the client and redirect URI it was given to, with the
/// verifier whose SHA-256 (by openssl) is the challenge.
fn token(stream: &mut TcpStream, shared: &Shared, body: &str) -> std::io::Result<()> {
    let f = form(body);
    let field = |k: &str| f.get(k).cloned().unwrap_or_default();
    let grant = shared.state().codes.remove(&field("code"));
    let invalid = json!({"error": "invalid_grant"});
    let Some(grant) = grant.filter(|_| field("grant_type") == "authorization_code") else {
        return respond(stream, "400 Bad Request", &invalid);
    };
    let digest = run(
        &mut openssl(&["dgst", "-sha256", "-binary"]),
        Some(field("code_verifier").as_bytes()),
    );
    let pkce = URL_SAFE_NO_PAD.encode(digest) == grant.challenge;
    if !pkce || grant.client_id != field("client_id") || grant.redirect_uri != field("redirect_uri")
    {
        return respond(stream, "400 Bad Request", &invalid);
    }
    let answer = json!({"access_token": grant.token, "token_type": "Bearer", "expires_in": 300});
    respond(stream, "200 OK", &answer)
}

/// Writes an HTTP/1.1 JSON response with Content-Length and `Connection: close`, then closes.
fn respond(stream: &mut TcpStream, status: &str, body: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(body).expect("serialize a response body");
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    stream.write_all(&response)?;
    stream.flush()?;
    match stream.shutdown(Shutdown::Write) {
        Err(e) if e.kind() != ErrorKind::NotConnected => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{der_to_raw, integer_32, strip_zeros, unhex};

    /// DER SEQUENCE { INTEGER r, INTEGER s } from the INTEGERs' content octets.
    fn der(r: &[u8], s: &[u8]) -> Vec<u8> {
        let mut body = vec![0x02, u8::try_from(r.len()).unwrap()];
        body.extend_from_slice(r);
        body.extend_from_slice(&[0x02, u8::try_from(s.len()).unwrap()]);
        body.extend_from_slice(s);
        let mut out = vec![0x30, u8::try_from(body.len()).unwrap()];
        out.extend(body);
        out
    }

    fn raw(r: &[u8; 32], s: &[u8; 32]) -> [u8; 64] {
        let mut out = [0; 64];
        out[..32].copy_from_slice(r);
        out[32..].copy_from_slice(s);
        out
    }

    #[test]
    fn der_signature_with_32_byte_integers() {
        let r = [0x11; 32];
        let s = [0x7f; 32];
        assert_eq!(der_to_raw(&der(&r, &s)).unwrap(), raw(&r, &s));
    }

    #[test]
    fn der_signature_with_33_byte_integers_drops_the_sign_byte() {
        let r = [0x80; 32];
        let s = [0xff; 32];
        let mut r33 = vec![0];
        r33.extend_from_slice(&r);
        let mut s33 = vec![0];
        s33.extend_from_slice(&s);
        let encoded = der(&r33, &s33);
        assert_eq!(&encoded[..4], &[0x30, 0x46, 0x02, 0x21]);
        assert_eq!(der_to_raw(&encoded).unwrap(), raw(&r, &s));
        // Only one of them 33 bytes long.
        let only_r = der(&r33, &[0x01; 32]);
        assert_eq!(der_to_raw(&only_r).unwrap(), raw(&r, &[0x01; 32]));
    }

    #[test]
    fn der_signature_with_short_integers_is_left_padded() {
        let mut r = [0; 32];
        r[1..].copy_from_slice(&[0x42; 31]);
        let mut s = [0; 32];
        s[31] = 0x05;
        assert_eq!(der_to_raw(&der(&r[1..], &[0x05])).unwrap(), raw(&r, &s));
        // A short integer whose top bit is set keeps DER's 0x00 sign byte: 00 9a -> ... 9a.
        let mut s = [0; 32];
        s[31] = 0x9a;
        assert_eq!(
            der_to_raw(&der(&[0x00, 0x9a], &[0x00, 0x9a])).unwrap(),
            raw(&s, &s)
        );
        // Zero.
        assert_eq!(der_to_raw(&der(&[0x00], &[0x00])).unwrap(), [0; 64]);
    }

    #[test]
    fn der_signature_with_one_byte_long_form_length() {
        let r = [0x21; 32];
        let s = [0x43; 32];
        let mut long = der(&r, &s);
        long.splice(1..2, [0x81, 0x44]);
        assert_eq!(der_to_raw(&long).unwrap(), raw(&r, &s));
    }

    #[test]
    fn malformed_der_signatures_are_refused() {
        let good = der(&[0x01; 32], &[0x02; 32]);
        assert!(der_to_raw(&good).is_ok());
        let mut wrong_tag = good.clone();
        wrong_tag[0] = 0x31;
        assert!(der_to_raw(&wrong_tag).is_err());
        let mut wrong_inner_tag = good.clone();
        wrong_inner_tag[2] = 0x04;
        assert!(der_to_raw(&wrong_inner_tag).is_err());
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(der_to_raw(&trailing).is_err());
        assert!(der_to_raw(&good[..good.len() - 1]).is_err());
        assert!(der_to_raw(&[]).is_err());
        assert!(der_to_raw(&[0x30]).is_err());
        assert!(der_to_raw(&der(&[0x01; 32], &[])).is_err());
        assert!(
            der_to_raw(&der(&[0x01; 33], &[0x02; 32])).is_err(),
            "33 significant bytes"
        );
        assert!(
            der_to_raw(&der(&[0x80; 32], &[0x02; 32])).is_err(),
            "negative"
        );
        assert!(der_to_raw(&der(&[0x01; 32], &[0x02; 32])[..2]).is_err());
        let mut three = der(&[0x01; 32], &[0x02; 32]);
        three.extend_from_slice(&[0x02, 0x01, 0x01]);
        three[1] += 3;
        assert!(der_to_raw(&three).is_err(), "a third INTEGER");
        assert!(
            der_to_raw(&[0x30, 0x82, 0x00, 0x00]).is_err(),
            "two-byte long form"
        );
    }

    #[test]
    fn integer_and_hex_helpers() {
        let mut one = [0; 32];
        one[31] = 1;
        assert_eq!(integer_32(&[0, 0, 0, 1]).unwrap(), one);
        assert_eq!(strip_zeros(&[0, 0, 1, 0]), vec![1, 0]);
        assert_eq!(strip_zeros(&65537_u64.to_be_bytes()), vec![1, 0, 1]);
        assert_eq!(unhex("C3ab"), vec![0xc3, 0xab]);
        assert_eq!(unhex("abc"), vec![0x0a, 0xbc]);
    }
}
