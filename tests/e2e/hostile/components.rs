//! Hand-written components for what Rust guests cannot do: a core module written in WAT against
//! the canonical ABI of `wit/plugin.wit`, wrapped into a component by `wit-component` at test
//! time. Each offers one read-only tool whose `call` runs a chosen body, and may carry extra
//! declarations (memories, tables), a huge initial memory, or declarations of its choosing
//! (description, title, schemas) up to 56 KiB in all.

use wit_component::{ComponentEncoder, StringEncoding, embed_component_metadata};
use wit_parser::{Resolve, WorldId};

use crate::harness::root;

/// Where the fixed data lives in linear memory (page 0); the bump allocator starts at page 1.
const DESCRIBE_RET: u32 = 0;
const CALL_RET: u32 = 16;
const NAME: u32 = 1024;
/// Bytes a body can point at: see [`Component::payload`].
pub(crate) const PAYLOAD: u32 = 2560;
const SPEC: u32 = 4096;
/// Where the declared texts (description, schemas, title) go, one after another, below the heap.
const TEXTS: u32 = 8192;
const TEXTS_END: u32 = 65536;

/// One hand-written component.
pub(crate) struct Component {
    tool: String,
    pages: u32,
    extra: String,
    body: String,
    payload: Vec<u8>,
    describe_len: u32,
    description: Option<String>,
    title: Option<String>,
    input_schema: String,
    output_schema: Option<String>,
}

impl Component {
    /// A component whose tool `tool` answers "ok" (overridden by [`Self::body`]).
    pub(crate) fn new(tool: &str) -> Self {
        Self {
            tool: tool.into(),
            pages: 2,
            extra: String::new(),
            body: ok_content(PAYLOAD, 0),
            payload: Vec::new(),
            describe_len: 1,
            description: None,
            title: None,
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
        }
    }

    /// The tool's description [default: "[test fixture] hand-written TOOL"].
    pub(crate) fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// The tool's title [default: none].
    pub(crate) fn title(mut self, text: impl Into<String>) -> Self {
        self.title = Some(text.into());
        self
    }

    /// The tool's input schema text [default: `{"type":"object"}`].
    pub(crate) fn input_schema(mut self, text: impl Into<String>) -> Self {
        self.input_schema = text.into();
        self
    }

    /// The tool's output schema text [default: none].
    pub(crate) fn output_schema(mut self, text: impl Into<String>) -> Self {
        self.output_schema = Some(text.into());
        self
    }

    /// Initial memory, in 64 KiB pages.
    pub(crate) fn pages(mut self, pages: u32) -> Self {
        self.pages = pages;
        self
    }

    /// Extra core-module declarations, e.g. `(memory 1)` or `(table 1 funcref)`.
    pub(crate) fn extra(mut self, wat: impl Into<String>) -> Self {
        self.extra = wat.into();
        self
    }

    /// The body of `call`, which must leave its answer at the call's return area.
    pub(crate) fn body(mut self, wat: impl Into<String>) -> Self {
        self.body = wat.into();
        self
    }

    /// Bytes placed at [`PAYLOAD`].
    pub(crate) fn payload(mut self, bytes: &[u8]) -> Self {
        self.payload = bytes.to_vec();
        self
    }

    /// The length `describe` claims for its list of tools.
    pub(crate) fn describe_len(mut self, len: u32) -> Self {
        self.describe_len = len;
        self
    }

    /// The core module's text.
    pub(crate) fn wat(&self) -> String {
        let description = self
            .description
            .clone()
            .unwrap_or_else(|| format!("[test fixture] hand-written {}", self.tool));
        // The texts, back to back from TEXTS; each entry is (offset, length).
        let mut texts = Vec::new();
        let mut place = |text: &str| {
            let at = TEXTS + texts.len() as u32;
            texts.extend_from_slice(text.as_bytes());
            assert!(at + text.len() as u32 <= TEXTS_END, "declarations too long");
            (at, text.len() as u32)
        };
        let description = place(&description);
        let input_schema = place(&self.input_schema);
        let output_schema = self.output_schema.as_deref().map(&mut place);
        let title = self.title.as_deref().map(&mut place);
        let mut spec = vec![0u8; 64];
        let mut put = |at: usize, v: u32| spec[at..at + 4].copy_from_slice(&v.to_le_bytes());
        put(0, NAME);
        put(4, self.tool.len() as u32);
        if let Some((at, len)) = title {
            put(8, 1);
            put(12, at);
            put(16, len);
        }
        put(20, description.0);
        put(24, description.1);
        put(28, input_schema.0);
        put(32, input_schema.1);
        if let Some((at, len)) = output_schema {
            put(36, 1);
            put(40, at);
            put(44, len);
        }
        spec[48] = 1; // hints: read-only
        let mut ret = Vec::new();
        ret.extend_from_slice(&SPEC.to_le_bytes());
        ret.extend_from_slice(&self.describe_len.to_le_bytes());
        format!(
            r#"(module
  (import "toolhost:plugin/host@0.1.0" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") {pages})
  {extra}
  (global $heap (mut i32) (i32.const 65536))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $p i32)
    (local.set $p (i32.and
      (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
      (i32.sub (i32.const 0) (local.get 2))))
    (global.set $heap (i32.add (local.get $p) (local.get 3)))
    (block $fits
      (br_if $fits (i32.le_u (global.get $heap) (i32.shl (memory.size) (i32.const 16))))
      (br_if $fits (i32.ne (i32.const -1)
        (memory.grow (i32.add (i32.const 1)
          (i32.shr_u (i32.sub (global.get $heap) (i32.shl (memory.size) (i32.const 16))) (i32.const 16))))))
      unreachable)
    (local.get $p))
  (data (i32.const {DESCRIBE_RET}) "{ret}")
  (data (i32.const {NAME}) "{name}")
  (data (i32.const {TEXTS}) "{texts}")
  (data (i32.const {PAYLOAD}) "{payload}")
  (data (i32.const {SPEC}) "{spec}")
  (func (export "toolhost:plugin/tool@0.1.0#describe") (result i32) (i32.const {DESCRIBE_RET}))
  (func (export "toolhost:plugin/tool@0.1.0#call") (param i32 i32 i32 i32) (result i32)
    {body}
    (i32.const {CALL_RET})))
"#,
            pages = self.pages,
            extra = self.extra,
            ret = escape(&ret),
            name = escape(self.tool.as_bytes()),
            texts = escape(&texts),
            payload = escape(&self.payload),
            spec = escape(&spec),
            body = self.body,
        )
    }

    /// The component's bytes.
    pub(crate) fn build(&self) -> Vec<u8> {
        let core = wat::parse_str(self.wat()).unwrap_or_else(|e| panic!("{e}\n{}", self.wat()));
        let mut resolve = Resolve::default();
        let (package, _) = resolve.push_dir(root().join("wit")).unwrap();
        let world = resolve.select_world(&[package], Some("plugin")).unwrap();
        componentize(core, &resolve, world)
    }
}

/// The component of the core module `core` for `world`.
pub(crate) fn componentize(mut core: Vec<u8>, resolve: &Resolve, world: WorldId) -> Vec<u8> {
    embed_component_metadata(&mut core, resolve, world, StringEncoding::UTF8, false).unwrap();
    ComponentEncoder::default()
        .validate(true)
        .module(&core)
        .unwrap()
        .encode()
        .unwrap_or_else(|e| panic!("{e:#}"))
}

/// A `call` body answering `ok` with `len` bytes at `ptr` as content, no structured output.
pub(crate) fn ok_content(ptr: u32, len: u32) -> String {
    format!(
        "(i32.store8 (i32.const {CALL_RET}) (i32.const 0))
    (i32.store (i32.const {c}) (i32.const {ptr}))
    (i32.store (i32.const {l}) (i32.const {len}))
    (i32.store8 (i32.const {s}) (i32.const 0))",
        c = CALL_RET + 4,
        l = CALL_RET + 8,
        s = CALL_RET + 12,
        ptr = ptr as i32,
        len = len as i32,
    )
}

/// A `call` body answering `ok` with no content and the `len` bytes at `ptr` as structured output.
pub(crate) fn ok_structured(ptr: u32, len: u32) -> String {
    format!(
        "{}
    (i32.store8 (i32.const {s}) (i32.const 1))
    (i32.store (i32.const {sp}) (i32.const {ptr}))
    (i32.store (i32.const {sl}) (i32.const {len}))",
        ok_content(PAYLOAD, 0),
        s = CALL_RET + 12,
        sp = CALL_RET + 16,
        sl = CALL_RET + 20,
        ptr = ptr as i32,
        len = len as i32,
    )
}

/// A `call` body that logs `len` bytes at `ptr` through the host, then answers `ok` ("").
pub(crate) fn log_then_ok(ptr: u32, len: u32) -> String {
    format!(
        "(call $log (i32.const 2) (i32.const {ptr}) (i32.const {len}))\n    {}",
        ok_content(PAYLOAD, 0),
        ptr = ptr as i32,
        len = len as i32,
    )
}

fn escape(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:02x}")).collect()
}
