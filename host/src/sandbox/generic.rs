//! Generic plugins: a component without the `toolhost:plugin` contract whose exported functions
//! are tools. This module reads their types from the compiled component and carries values across
//! wasmtime's dynamic `Val` API; what a type or value means in JSON is decided by
//! [`toolhost_call::wit`].

use std::collections::HashMap;

use wasmtime::component::types::{ComponentFunc, ComponentItem};
use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, Type, Val};
use wasmtime::{Engine, Store};

mod value;

use self::value::{from_val, to_val};
use super::report::{CallResult, GuestError, GuestOutput, RunError};
use super::state::State;
use toolhost_call::wit::{
    Answer, DOCS_SECTION, Export, GenericTool, Skipped, WitType, export_path,
};

/// Types nested deeper than this are refused: every conversion walks them recursively.
const MAX_DEPTH: usize = 24;

/// The most doc-section bytes read from one component.
const MAX_DOCS_BYTES: usize = 1 << 20;

/// The contents of every `package-docs` section in the component `bytes`: its own, its nested
/// modules' and components', and those inside the WIT packages toolchains embed in
/// `component-type*` sections. Unparsable parts are skipped: docs never stop a plugin loading.
pub(crate) fn doc_sections(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    collect_docs(bytes, 0, &mut out);
    out
}

fn collect_docs(bytes: &[u8], depth: usize, out: &mut Vec<Vec<u8>>) {
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let Ok(wasmparser::Payload::CustomSection(section)) = payload else {
            if payload.is_err() {
                return;
            }
            continue;
        };
        let held: usize = out.iter().map(Vec::len).sum();
        if section.name() == DOCS_SECTION && held + section.data().len() <= MAX_DOCS_BYTES {
            out.push(section.data().to_vec());
        } else if section.name().starts_with("component-type") && depth < 2 {
            collect_docs(section.data(), depth + 1, out);
        }
    }
}

/// A generic plugin: its instance-pre, its callable functions and what was skipped.
pub(crate) struct Generic {
    pub(crate) pre: InstancePre<State>,
    pub(crate) functions: Functions,
    /// The tools, derived once at load.
    pub(crate) tools: Vec<GenericTool>,
    pub(crate) skipped: Vec<Skipped>,
}

/// A generic plugin's functions, by [`Export::path`], with where to find each in an instance.
pub(crate) struct Functions {
    by_path: HashMap<String, (Export, ComponentExportIndex)>,
}

impl Functions {
    /// The functions [`read`] found.
    pub(crate) fn new(found: Vec<(Export, ComponentExportIndex)>) -> Self {
        Self {
            by_path: found.into_iter().map(|f| (f.0.path(), f)).collect(),
        }
    }

    pub(crate) fn get(&self, path: &str) -> Option<&(Export, ComponentExportIndex)> {
        self.by_path.get(path)
    }
}

/// One call of a generic plugin's function, its arguments read from the input, ready to run.
pub(crate) struct GenericCall {
    export: Export,
    index: ComponentExportIndex,
    tool: String,
    params: Vec<Val>,
}

impl GenericCall {
    /// The call of `tool` (an [`Export::path`]) with `input` (JSON text) read into its arguments
    /// exactly; or the answer without running the guest: no such function, or the input does not fit.
    pub(crate) fn new(generic: &Generic, tool: &str, input: &str) -> Result<Self, CallResult> {
        let Some((export, index)) = generic.functions.get(tool) else {
            return Err(Err(RunError::Setup(format!(
                "no exported function `{tool}`"
            ))));
        };
        let args = serde_json::from_str(input)
            .map_err(|e| vec![format!("/: not JSON ({e})")])
            .and_then(|json| export.arguments(&json));
        let params = args
            .map_err(|problems| problems.join("\n- "))
            .and_then(|args| {
                export
                    .params
                    .iter()
                    .zip(args)
                    .map(|((_, ty), v)| to_val(ty, v))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| "an argument does not have its parameter's type".to_owned())
            })
            .map_err(|problems| Ok(Err(GuestError::InvalidInput(problems))))?;
        Ok(Self {
            export: export.clone(),
            index: *index,
            tool: tool.to_owned(),
            params,
        })
    }

    /// Call the function in `instance` through wasmtime's dynamic API, and turn its return value
    /// into the model's answer.
    pub(crate) async fn invoke(
        self,
        store: &mut Store<State>,
        instance: Instance,
    ) -> wasmtime::Result<Result<GuestOutput, GuestError>> {
        let Self {
            export,
            index,
            tool,
            params,
        } = self;
        let func = instance
            .get_func(&mut *store, index)
            .ok_or_else(|| wasmtime::format_err!("the export `{tool}` is not a function"))?;
        let mut results = vec![Val::Bool(false); usize::from(export.result.is_some())];
        func.call_async(&mut *store, &params, &mut results).await?;
        let returned = match results.pop() {
            None => None,
            Some(v) => Some(from_val(v).ok_or_else(|| {
                wasmtime::format_err!("the function returned a value without a JSON form")
            })?),
        };
        Ok(match export.answer(returned.as_ref()) {
            Ok(Answer::Done {
                content,
                structured,
            }) => Ok(GuestOutput {
                content,
                structured: structured.map(|v| v.to_string()),
            }),
            Ok(Answer::Failed(text)) => Err(GuestError::Failed(text)),
            Err(mismatch) => return Err(wasmtime::format_err!("{mismatch}")),
        })
    }
}

/// A usable exported function, and where to find it in an instance.
pub(crate) type Found = (Export, ComponentExportIndex);

/// Every exported function of `component`: the usable ones, in the component's order, and the
/// skipped ones with their reasons.
pub(crate) fn read(component: &Component, engine: &Engine) -> (Vec<Found>, Vec<Skipped>) {
    let mut r = Reading::default();
    let ty = component.component_type();
    for (name, item) in ty.exports(engine) {
        match item.ty {
            ComponentItem::ComponentFunc(f) => {
                r.function(None, name, &f, component.get_export_index(None, name));
            }
            ComponentItem::ComponentInstance(_) if name.starts_with("wasi:") => {
                r.skip(
                    name,
                    "a WASI interface, which the host calls itself, not a tool",
                );
            }
            ComponentItem::ComponentInstance(instance) => {
                let parent = component.get_export_index(None, name);
                for (function, item) in instance.exports(engine) {
                    match item.ty {
                        ComponentItem::ComponentFunc(f) => {
                            let index = parent
                                .as_ref()
                                .and_then(|p| component.get_export_index(Some(p), function));
                            r.function(Some(name), function, &f, index);
                        }
                        ComponentItem::Type(_) | ComponentItem::Resource(_) => {}
                        _ => r.skip(&format!("{name}#{function}"), "not a function"),
                    }
                }
            }
            ComponentItem::Type(_) | ComponentItem::Resource(_) => {}
            _ => r.skip(name, "a nested module or component, not a function"),
        }
    }
    (r.found, r.skipped)
}

/// What [`read`] has found so far.
#[derive(Default)]
struct Reading {
    found: Vec<Found>,
    skipped: Vec<Skipped>,
}

impl Reading {
    fn function(
        &mut self,
        interface: Option<&str>,
        name: &str,
        f: &ComponentFunc,
        index: Option<ComponentExportIndex>,
    ) {
        let path = export_path(interface, name);
        match (export(interface, name, f), index) {
            (Ok(export), Some(index)) => self.found.push((export, index)),
            (Err(reason), _) => self.skip(&path, &reason),
            (Ok(_), None) => self.skip(&path, "cannot be found in the component"),
        }
    }

    fn skip(&mut self, export: &str, reason: &str) {
        self.skipped.push(Skipped {
            export: export.to_owned(),
            reason: reason.to_owned(),
        });
    }
}

/// The function `name` with its parameters and result as JSON-able types, or why it cannot be a tool.
fn export(interface: Option<&str>, name: &str, f: &ComponentFunc) -> Result<Export, String> {
    if name.starts_with('[') {
        return Err(
            "a resource's constructor, method or static function; resources are not supported"
                .into(),
        );
    }
    let params = f
        .params()
        .map(|(p, ty)| {
            wit_type(&ty, 0)
                .map(|t| (p.to_owned(), t))
                .map_err(|why| format!("parameter `{p}` {why}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut results = f.results();
    let result = match (results.next(), results.next()) {
        (None, _) => None,
        (Some(ty), None) => Some(wit_type(&ty, 0).map_err(|why| format!("the result {why}"))?),
        (Some(_), Some(_)) => {
            return Err(
                "returns several values, which the component model no longer allows".into(),
            );
        }
    };
    Ok(Export {
        interface: interface.map(str::to_owned),
        function: name.to_owned(),
        params,
        result,
    })
}

/// The JSON-able counterpart of `ty`, or why it has none.
fn wit_type(ty: &Type, depth: usize) -> Result<WitType, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nests types more than {MAX_DEPTH} deep"));
    }
    let inner = |t: &Type| wit_type(t, depth + 1).map(Box::new);
    Ok(match ty {
        Type::Bool => WitType::Bool,
        Type::S8 => WitType::S8,
        Type::U8 => WitType::U8,
        Type::S16 => WitType::S16,
        Type::U16 => WitType::U16,
        Type::S32 => WitType::S32,
        Type::U32 => WitType::U32,
        Type::S64 => WitType::S64,
        Type::U64 => WitType::U64,
        Type::Float32 => WitType::F32,
        Type::Float64 => WitType::F64,
        Type::Char => WitType::Char,
        Type::String => WitType::String,
        Type::List(l) => WitType::List(inner(&l.ty())?),
        Type::FixedLengthList(l) => WitType::FixedList(inner(&l.ty())?, l.len()),
        Type::Record(r) => WitType::Record(
            r.fields()
                .map(|f| Ok((f.name.to_owned(), *inner(&f.ty)?)))
                .collect::<Result<_, String>>()?,
        ),
        Type::Tuple(t) => WitType::Tuple(
            t.types()
                .map(|t| wit_type(&t, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Type::Variant(v) => WitType::Variant(
            v.cases()
                .map(|c| {
                    Ok((
                        c.name.to_owned(),
                        c.ty.as_ref().map(|t| wit_type(t, depth + 1)).transpose()?,
                    ))
                })
                .collect::<Result<_, String>>()?,
        ),
        Type::Enum(e) => WitType::Enum(e.names().map(str::to_owned).collect()),
        Type::Option(o) => WitType::Option(inner(&o.ty())?),
        Type::Result(r) => WitType::Result {
            ok: r.ok().as_ref().map(inner).transpose()?,
            err: r.err().as_ref().map(inner).transpose()?,
        },
        Type::Flags(f) => WitType::Flags(f.names().map(str::to_owned).collect()),
        Type::Own(_) | Type::Borrow(_) => {
            return Err("is a resource handle; resources are not supported".into());
        }
        Type::Future(_) => return Err("is a future; futures are not supported".into()),
        Type::Stream(_) => return Err("is a stream; streams are not supported".into()),
        Type::ErrorContext => return Err("is an error-context, which is not supported".into()),
        Type::Map(_) => return Err("is a map, which is not supported yet".into()),
    })
}
