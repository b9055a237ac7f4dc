//! MCP over stdio as JSON lines: rmcp's line transport with one change, how a `tools/call` is read.
//!
//! rmcp reads every line as its `JsonRpcMessage`, whose request is an untagged enum of every
//! client request: serde buffers the message and tries the variants one by one, and each that
//! fails on its `method` builds an error that is thrown away. For a `tools/call`, thirteen of
//! them come first; reading it took about 35,000 instructions, more than a seventh of a whole
//! sandboxed echo call (`scripts/bench.sh --callgrind-mcp`). A line that names `tools/call` is
//! read here as that request directly, through rmcp's own types; any other line, and one that
//! does not read as a `tools/call` (which rmcp may still take as a custom request), goes through
//! rmcp's own decoder, so that what is accepted, ignored or refused stays rmcp's decision. Writing
//! is rmcp's transport itself.

use std::io;
use std::pin::Pin;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0,
    RequestId,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{AsyncRwTransport, JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Decoder;

/// The longest line read (rmcp's default, the same as its HTTP client's largest event): a
/// longer one is dropped whole, and the session goes on.
pub(crate) const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// A byte order mark, which JSON readers may skip (RFC 8259, 8.1).
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The transport: lines read from `R`, messages written to `W` by rmcp.
pub(crate) struct Lines<R, W: AsyncWrite> {
    read: BufReader<R>,
    /// The line being read, kept across a cancelled `receive` (rmcp polls it in a `select!`).
    line: Vec<u8>,
    /// Dropping the rest of a line that was too long.
    discarding: bool,
    /// rmcp's decoder, for every line that is not a `tools/call`.
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
    write: AsyncRwTransport<RoleServer, tokio::io::Empty, W>,
    /// The "Invalid Request" answer being written: finished before the next line is read, as rmcp
    /// does, so that a client which never reads cannot queue answers without end. Kept here so
    /// that a cancelled `receive` resumes it.
    refusal: Option<Pin<Box<dyn Future<Output = io::Result<()>> + Send>>>,
}

/// How one read of a line ended.
enum Read {
    Line,
    TooLong,
    End,
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            codec: JsonRpcMessageCodec::default(),
            write: AsyncRwTransport::new(tokio::io::empty(), write),
            refusal: None,
        }
    }

    /// Reads up to the next `\n` into `self.line`, never holding more than [`MAX_LINE`]. Safe
    /// to cancel: each copy into `line` and its `consume` happen with no await between them.
    async fn read_line(&mut self) -> io::Result<Read> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::End);
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.map_or(available.len(), |at| at + 1);
            let mut read = None;
            if self.discarding {
                self.discarding = newline.is_none();
            } else if self.line.len() + take > MAX_LINE {
                self.line.clear();
                self.discarding = newline.is_none();
                read = Some(Read::TooLong);
            } else {
                self.line.extend_from_slice(&available[..take]);
                read = newline.map(|_| Read::Line);
            }
            self.read.consume(take);
            if let Some(read) = read {
                return Ok(read);
            }
        }
    }

    /// The message on `self.line` (ending with `\n`): `Ok(None)` for a line rmcp ignores.
    fn parse(&mut self) -> Result<Option<RxJsonRpcMessage<RoleServer>>, JsonRpcMessageCodecError> {
        if let Some(call) = tools_call(&self.line) {
            return Ok(Some(call));
        }
        let mut line = BytesMut::from(self.line.as_slice());
        self.codec.decode(&mut line)
    }
}

/// A `tools/call` request as rmcp's `JsonRpcRequest` reads it, and whether the message also has a
/// `result` or an `error`, which makes it no request to rmcp (it answers Invalid Request).
#[derive(Deserialize)]
struct Call {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(flatten)]
    request: CallToolRequest,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

/// The key is there, whatever its value (`null` included, as rmcp counts it).
fn present<'de, D: Deserializer<'de>>(value: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(value).map(|_| true)
}

/// `line` read as a `tools/call` request, when it names one and reads as one.
fn tools_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    static METHOD: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"tools/call\""));
    METHOD.find(line)?;
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(BOM).unwrap_or(line);
    let call: Call = serde_json::from_slice(line).ok()?;
    if call.result || call.error {
        return None;
    }
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: ClientRequest::CallToolRequest(call.request),
    }))
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.write.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(refusal) = self.refusal.as_mut() {
                let sent = refusal.await;
                self.refusal = None;
                if let Err(e) = sent {
                    tracing::error!("writing to stdout failed: {e}");
                    return None;
                }
            }
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::TooLong) => {
                    tracing::error!(
                        max = MAX_LINE,
                        "a message longer than the limit was dropped"
                    );
                    continue;
                }
                // Bytes after the last `\n` are a message cut off: nothing to deliver.
                Ok(Read::End) => return None,
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return None;
                }
            }
            let blank = self.line.iter().all(u8::is_ascii_whitespace);
            let parsed = if blank { Ok(None) } else { self.parse() };
            self.line.clear();
            match parsed {
                Ok(Some(message)) => return Some(message),
                Ok(None) => {}
                // Not JSON: there is no id to answer, and answering could start an error storm
                // with a client that echoes it (rmcp ignores it too).
                Err(JsonRpcMessageCodecError::Serde(e))
                    if matches!(
                        e.classify(),
                        serde_json::error::Category::Syntax | serde_json::error::Category::Eof
                    ) =>
                {
                    tracing::debug!("ignoring a line that is not JSON: {e}");
                }
                // JSON that is no message: answered "Invalid Request", as rmcp does, before the
                // next line is read (at the top of the loop).
                Err(JsonRpcMessageCodecError::Serde(e)) => {
                    tracing::debug!("a line that is no JSON-RPC message: {e}");
                    let refusal = TxJsonRpcMessage::<RoleServer>::error(
                        ErrorData::invalid_request("Invalid request", None),
                        None,
                    );
                    self.refusal = Some(Box::pin(self.write.send(refusal)));
                }
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.close().await
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// What rmcp's own decoder makes of `line`.
    fn by_rmcp(line: &str) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut codec = JsonRpcMessageCodec::<RxJsonRpcMessage<RoleServer>>::default();
        codec
            .decode(&mut BytesMut::from(format!("{line}\n").as_str()))
            .unwrap()
    }

    #[test]
    fn a_tools_call_reads_as_rmcp_reads_it() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            r#"{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"echo","arguments":{"text":"\"tools/call\"","n":[1,2.5,null]},"_meta":{"progressToken":7,"x":{"y":true}}}}"#,
            r#"{"params":{"arguments":{},"name":"e"},"method":"tools/call","id":2,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"e","task":{"ttl":1000}}}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"e\"}}\r",
        ] {
            let ours = tools_call(format!("{line}\n").as_bytes()).expect(line);
            let theirs = by_rmcp(line.trim_end_matches('\r')).expect(line);
            assert!(matches!(
                &ours,
                JsonRpcMessage::Request(JsonRpcRequest {
                    request: ClientRequest::CallToolRequest(_),
                    ..
                })
            ));
            assert_eq!(
                serde_json::to_value(&ours).unwrap(),
                serde_json::to_value(&theirs).unwrap(),
                "{line}"
            );
        }
    }

    #[test]
    fn what_is_no_tools_call_is_left_to_rmcp() {
        for line in [
            // Another method, with tools/call only in an argument.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"\"tools/call\""}}"#,
            // No name: rmcp's decision (a custom request, answered invalid params).
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#,
            // A notification naming it: not a request.
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"e"}}"#,
            // The wrong version.
            r#"{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"e"}}"#,
        ] {
            // Only a real request may be taken, and then as rmcp takes it.
            if let Some(ours) = tools_call(format!("{line}\n").as_bytes()) {
                let theirs = by_rmcp(line).map(|m| serde_json::to_value(m).unwrap());
                assert_eq!(Some(serde_json::to_value(ours).unwrap()), theirs, "{line}");
            }
        }
        // A request that also carries `result` or `error` is no request to rmcp (it answers Invalid
        // Request): the tool must not run.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"error":null}"#,
            r#"{"error":{"code":1,"message":"x"},"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
        ] {
            assert!(
                tools_call(format!("{line}\n").as_bytes()).is_none(),
                "{line}"
            );
            let mut codec = JsonRpcMessageCodec::<RxJsonRpcMessage<RoleServer>>::default();
            let refused = codec.decode(&mut BytesMut::from(format!("{line}\n").as_str()));
            assert!(refused.is_err(), "rmcp refuses {line}");
        }
        assert!(
            tools_call(
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{}}}"#
            )
            .is_none()
        );
        assert!(
            tools_call(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"e"}}"#)
                .is_none()
        );
    }

    /// The messages and raw answers of a session fed `input`, then ended.
    async fn session(input: &[u8]) -> (Vec<serde_json::Value>, String) {
        let (mut client, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, mut answers) = tokio::io::duplex(1 << 20);
        let mut lines = Lines::new(server_in, server_out);
        let input = input.to_vec();
        tokio::spawn(async move { client.write_all(&input).await });
        let mut got = Vec::new();
        while let Some(message) = lines.receive().await {
            got.push(serde_json::to_value(message).unwrap());
        }
        lines.close().await.unwrap();
        drop(lines);
        let mut out = String::new();
        answers.read_to_string(&mut out).await.unwrap();
        (got, out)
    }

    #[tokio::test]
    async fn bad_lines_are_ignored_or_refused_and_the_session_goes_on() {
        let call = r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}}"#;
        let input = format!(
            "\n  \r\nnot json\n{{\"x\":1}}\n{{\"jsonrpc\":\"2.0\",\"method\":\"lsp/any\"}}\n{call}\r\n{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\""
        );
        let (got, out) = session(input.as_bytes()).await;
        // rmcp takes the other protocol's notification as a custom one; then the call, once; the
        // cut-off last line is no message.
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0]["method"], "lsp/any");
        assert_eq!(got[1]["id"], 9);
        assert_eq!(got[1]["params"]["name"], "echo");
        // `{"x":1}` alone was answered: Invalid Request, with no id.
        let answers: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 1, "{out}");
        assert_eq!(answers[0]["error"]["code"], -32600);
        assert!(answers[0].get("id").is_none());
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_dropped_whole() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#;
        let mut input =
            br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"t":""#
                .to_vec();
        input.resize(input.len() + MAX_LINE, b'a');
        input.extend_from_slice(b"\"}}}\n");
        input.extend_from_slice(call.as_bytes());
        input.push(b'\n');
        let (got, _) = session(&input).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["id"], 1);
    }
}
