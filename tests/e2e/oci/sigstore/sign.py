"""Signs a file keylessly with sigstore-python, against a Sigstore of the test's own on 127.0.0.1.

    sign.py DIR ARTIFACT BUNDLE --identity ID --issuer URL [--log-late SECONDS] [--lifetime SECONDS]

The trust material is made once per DIR with openssl: a root CA, an intermediate (Fulcio's issuer),
the transparency log's key and the certificate log's key; DIR/trusted_root.json describes them as
Sigstore's trusted root does. Each run starts a Fulcio and a Rekor (v1 API) on loopback ports, has
`sigstore sign` (the PyPI package, not toolhost) request a certificate for an identity token naming
ID and URL, sign ARTIFACT and log it, and has `sigstore verify identity --offline` check the bundle
it wrote. So every part of the bundle toolhost is tested against was made and checked by another
implementation: toolhost only has to agree with it.

--log-late makes the log record the entry SECONDS after the certificate expired (its signed entry
timestamp still valid): sigstore-python must then refuse the bundle, and the run checks that it does.
--lifetime is the certificate's, 600 seconds unless given (a short one lets a test outlive it).
"""

import argparse
import base64
import datetime
import hashlib
import json
import os
import secrets
import struct
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jwt
import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, ObjectIdentifier

ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")
TOKEN_SECRET = secrets.token_bytes(32)


def openssl(*args, cwd):
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"openssl {args[0]} failed: {done.stderr}")


def make_authority(d: Path):
    """The root, the intermediate and the two log keys, by openssl (EC P-256), once per DIR."""
    if (d / "trusted_root.json").exists():
        return
    ext = d / "ext.cnf"
    ext.write_text(
        "[req]\ndistinguished_name=dn\n[dn]\n"
        "[root]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
        "subjectKeyIdentifier=hash\n"
        "[intermediate]\nbasicConstraints=critical,CA:TRUE,pathlen:0\n"
        "keyUsage=critical,keyCertSign,cRLSign\nextendedKeyUsage=codeSigning\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always\n"
    )
    for name in ["root", "intermediate", "rekor", "ctlog"]:
        openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", f"{name}.key", cwd=d)
    openssl(
        "req", "-x509", "-new", "-key", "root.key", "-sha256", "-days", "3650",
        "-subj", "/O=toolhost tests/CN=test sigstore root", "-config", "ext.cnf",
        "-extensions", "root", "-out", "root.pem", cwd=d,
    )  # fmt: skip
    openssl(
        "req", "-new", "-key", "intermediate.key", "-subj",
        "/O=toolhost tests/CN=test sigstore intermediate", "-config", "ext.cnf", "-out", "intermediate.csr", cwd=d,
    )  # fmt: skip
    openssl(
        "x509", "-req", "-in", "intermediate.csr", "-CA", "root.pem", "-CAkey", "root.key",
        "-CAcreateserial", "-sha256", "-days", "3650", "-extfile", "ext.cnf",
        "-extensions", "intermediate", "-out", "intermediate.pem", cwd=d,
    )  # fmt: skip
    since = {"start": "2020-01-01T00:00:00Z"}

    def log(name, url):
        spki = public_der(load_key(d / f"{name}.key"))
        return {
            "baseUrl": url,
            "hashAlgorithm": "SHA2_256",
            "publicKey": {
                "rawBytes": b64(spki),
                "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                "validFor": since,
            },
            "logId": {"keyId": b64(hashlib.sha256(spki).digest())},
        }

    der = lambda name: b64(load_cert(d / f"{name}.pem").public_bytes(serialization.Encoding.DER))
    root = {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [log("rekor", "https://rekor.test.invalid")],
        "certificateAuthorities": [
            {
                "subject": {"organization": "toolhost tests", "commonName": "test sigstore"},
                "uri": "https://fulcio.test.invalid",
                "certChain": {"certificates": [{"rawBytes": der("intermediate")}, {"rawBytes": der("root")}]},
                "validFor": since,
            }
        ],
        "ctlogs": [log("ctlog", "https://ctfe.test.invalid")],
        "timestampAuthorities": [],
    }
    (d / "trusted_root.json").write_text(json.dumps(root, indent=1))


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def load_key(path: Path):
    return serialization.load_pem_private_key(path.read_bytes(), None)


def load_cert(path: Path):
    return x509.load_pem_x509_certificate(path.read_bytes())


def public_der(key) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def sign_p256(key, data: bytes) -> bytes:
    return key.sign(data, ec.ECDSA(hashes.SHA256()))


class Fulcio:
    """Issues a certificate for the token's subject and issuer, with an SCT embedded as Fulcio does:
    the certificate log signs the precertificate (the certificate without the SCT extension)."""

    def __init__(self, d: Path, lifetime: int):
        self.lifetime = datetime.timedelta(seconds=lifetime)
        self.key = load_key(d / "intermediate.key")
        self.cert = load_cert(d / "intermediate.pem")
        self.root = load_cert(d / "root.pem")
        self.ctlog = load_key(d / "ctlog.key")

    def issue(self, token: str, csr_pem: bytes) -> list[bytes]:
        claims = jwt.decode(token, TOKEN_SECRET, algorithms=["HS256"], audience="sigstore")
        csr = x509.load_pem_x509_csr(csr_pem)
        if not csr.is_signature_valid:
            raise ValueError("the request's proof of possession does not verify")
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        identity = claims["sub"]
        san = (
            x509.RFC822Name(identity) if "@" in identity and "/" not in identity
            else x509.UniformResourceIdentifier(identity)
        )  # fmt: skip
        issuer = claims["iss"].encode()
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.cert.subject)
            .public_key(csr.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(seconds=30))
            .not_valid_after(now + self.lifetime)
            .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(csr.public_key()), False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), False)
            .add_extension(x509.SubjectAlternativeName([san]), True)
            .add_extension(x509.UnrecognizedExtension(ISSUER_V1, issuer), False)
            # The newer issuer extension holds a DER UTF8String.
            .add_extension(x509.UnrecognizedExtension(ISSUER_V2, b"\x0c" + der_length(len(issuer)) + issuer), False)
        )
        precert = builder.sign(self.key, hashes.SHA256())
        sct = self.sct(precert.tbs_certificate_bytes, int(now.timestamp() * 1000))
        listed = struct.pack("!H", len(sct)) + sct
        listed = struct.pack("!H", len(listed)) + listed
        octets = b"\x04" + der_length(len(listed)) + listed
        leaf = builder.add_extension(x509.UnrecognizedExtension(SCT_LIST, octets), False).sign(
            self.key, hashes.SHA256()
        )
        assert leaf.tbs_precertificate_bytes == precert.tbs_certificate_bytes
        return [c.public_bytes(serialization.Encoding.PEM) for c in (leaf, self.cert, self.root)]

    def sct(self, tbs: bytes, millis: int) -> bytes:
        """An RFC 6962 v1 SCT for a precertificate entry."""
        log_id = hashlib.sha256(public_der(self.ctlog)).digest()
        issuer_key = hashlib.sha256(public_der(self.key)).digest()
        signed = (
            struct.pack("!BBQH", 0, 0, millis, 1)
            + issuer_key
            + struct.pack("!I", len(tbs))[1:]
            + tbs
            + struct.pack("!H", 0)
        )
        sig = sign_p256(self.ctlog, signed)
        return struct.pack("!B", 0) + log_id + struct.pack("!QH", millis, 0) + bytes([4, 3]) + struct.pack("!H", len(sig)) + sig


def der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(raw)]) + raw


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def tree_hash(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = split(len(leaves))
    return hashlib.sha256(b"\x01" + tree_hash(leaves[:k]) + tree_hash(leaves[k:])).digest()


def audit_path(m: int, leaves: list[bytes]) -> list[bytes]:
    """RFC 6962 section 2.1.1, from the leaf up."""
    if len(leaves) == 1:
        return []
    k = split(len(leaves))
    if m < k:
        return audit_path(m, leaves[:k]) + [tree_hash(leaves[k:])]
    return audit_path(m - k, leaves[k:]) + [tree_hash(leaves[:k])]


def split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


class Rekor:
    """A Rekor v1 log: entries appended to a Merkle tree (with a few others' before them, so the
    proof has a path), each answered with its signed entry timestamp, inclusion proof and signed
    checkpoint."""

    ORIGIN = "rekor.test.invalid - 2605736670972794746"

    def __init__(self, d: Path, late: int | None):
        self.key = load_key(d / "rekor.key")
        self.key_id = hashlib.sha256(public_der(self.key)).digest()
        self.late = late
        self.leaves = [leaf_hash(secrets.token_bytes(40)) for _ in range(5 + secrets.randbelow(6))]

    def append(self, proposed: dict, not_after: datetime.datetime | None) -> dict:
        body = rfc8785.dumps(proposed)
        index = len(self.leaves)
        self.leaves.append(leaf_hash(body))
        size, root = len(self.leaves), tree_hash(self.leaves)
        now = int(datetime.datetime.now(datetime.timezone.utc).timestamp())
        if self.late is not None and not_after is not None:
            now = int(not_after.timestamp()) + self.late
        entry = {
            "body": b64(body),
            "integratedTime": now,
            "logID": self.key_id.hex(),
            "logIndex": index,
        }
        promise = b64(sign_p256(self.key, rfc8785.dumps(entry)))
        note = f"{self.ORIGIN}\n{size}\n{b64(root)}\n"
        hint_sig = self.key_id[:4] + sign_p256(self.key, note.encode())
        entry["verification"] = {
            "signedEntryTimestamp": promise,
            "inclusionProof": {
                "logIndex": index,
                "treeSize": size,
                "rootHash": root.hex(),
                "hashes": [h.hex() for h in audit_path(index, self.leaves)],
                "checkpoint": f"{note}\n\u2014 rekor.test.invalid {b64(hint_sig)}\n",
            },
        }
        return {hashlib.sha256(body).hexdigest(): entry}


def serve(fulcio: Fulcio, rekor: Rekor) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                if self.path == "/api/v2/signingCert":
                    token = self.headers["Authorization"].removeprefix("Bearer ")
                    chain = fulcio.issue(token, base64.b64decode(request["certificateSigningRequest"]))
                    answer = {"signedCertificateEmbeddedSct": {"chain": {"certificates": [c.decode() for c in chain]}}}
                elif self.path == "/api/v1/log/entries":
                    pem = base64.b64decode(request["spec"]["signature"]["publicKey"]["content"])
                    answer = rekor.append(request, x509.load_pem_x509_certificate(pem).not_valid_after_utc)
                else:
                    self.send_error(404)
                    return
            except Exception as err:  # the client shows the answer; the test shows the client's
                self.send_error(400, explain=repr(err))
                return
            raw = json.dumps(answer).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def trust_config(d: Path, url: str) -> Path:
    since = {"start": "2020-01-01T00:00:00Z"}
    service = lambda version: {"url": url, "majorApiVersion": version, "validFor": since, "operator": "toolhost tests"}
    config = {
        "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
        "trustedRoot": json.loads((d / "trusted_root.json").read_text()),
        "signingConfig": {
            "mediaType": "application/vnd.dev.sigstore.signingconfig.v0.2+json",
            "caUrls": [service(1)],
            "oidcUrls": [],
            "rekorTlogUrls": [service(1)],
            "tsaUrls": [],
            "rekorTlogConfig": {"selector": "ANY"},
            "tsaConfig": {"selector": "ANY"},
        },
    }
    path = d / "trust_config.json"
    path.write_text(json.dumps(config))
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("artifact", type=Path)
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--identity", required=True)
    parser.add_argument("--issuer", required=True)
    parser.add_argument("--log-late", type=int)
    parser.add_argument("--lifetime", type=int, default=600)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    make_authority(args.dir)
    server = serve(Fulcio(args.dir, args.lifetime), Rekor(args.dir, args.log_late))
    config = trust_config(args.dir, f"http://127.0.0.1:{server.server_address[1]}")
    now = int(datetime.datetime.now(datetime.timezone.utc).timestamp())
    claims = {"iss": args.issuer, "sub": args.identity, "aud": "sigstore", "iat": now, "exp": now + 600}
    token = jwt.encode(claims, TOKEN_SECRET, algorithm="HS256")
    sigstore = [sys.executable, "-m", "sigstore", "--trust-config", str(config)]
    env = {**os.environ, "SIGSTORE_ID_TOKEN": ""}
    signed = subprocess.run(
        [*sigstore, "sign", "--identity-token", token, "--bundle", str(args.bundle), "--overwrite", str(args.artifact)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    server.shutdown()
    if signed.returncode != 0:
        sys.exit(f"sigstore sign failed:\n{signed.stdout}{signed.stderr}")
    verified = subprocess.run(
        [*sigstore, "verify", "identity", "--offline", "--bundle", str(args.bundle),
         "--cert-identity", args.identity, "--cert-oidc-issuer", args.issuer, str(args.artifact)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    said = verified.stdout + verified.stderr
    if args.log_late is None and verified.returncode != 0:
        sys.exit(f"sigstore verify refused the bundle it made:\n{said}")
    if args.log_late is not None and verified.returncode == 0:
        sys.exit(f"sigstore verify accepted a bundle logged after its certificate expired:\n{said}")
    print(said.strip())


if __name__ == "__main__":
    main()
