//! The subject of one call: the input value(s) at the tool's `permission_subject` pointer that the
//! rules judge, or why there is nothing to judge. Each value is normalised as a path, and resolved
//! through the plugin's mounts, at most once however many rules look at it.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;

use serde_json::Value;

use super::mounts::{Mounts, Resolved, Unresolved};
use super::path::NormalPath;

/// The subject of one call.
#[derive(Debug)]
pub(super) struct Subject<'a> {
    texts: Result<Vec<SubjectText<'a>>, Unjudged>,
}

/// One value to judge: a string as given, a number or boolean as its JSON text.
#[derive(Debug)]
pub(super) struct SubjectText<'a> {
    raw: Cow<'a, str>,
    mounts: Option<&'a Mounts>,
    path: OnceCell<NormalPath>,
    resolved: OnceCell<Option<Result<Resolved, Unresolved>>>,
}

/// Why a call's subject cannot be judged; pattern rules then fail closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unjudged {
    /// The tool declares no `permission_subject`.
    Undeclared,
    /// The input has nothing (or `null`) at the pointer.
    Missing(String),
    /// An object, an empty array, or an array holding something other than strings, numbers and booleans.
    Shape(String, &'static str),
}

impl fmt::Display for Unjudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Undeclared => f.write_str("the tool declares no permission subject"),
            Self::Missing(pointer) => write!(f, "the input has no `{pointer}`"),
            Self::Shape(pointer, what) => write!(f, "the input's `{pointer}` is {what}"),
        }
    }
}

impl<'a> Subject<'a> {
    /// The value at `pointer` in `input`; an array's elements are judged one by one.
    pub(super) fn of(input: &'a Value, pointer: Option<&str>) -> Self {
        let texts = match pointer {
            None => Err(Unjudged::Undeclared),
            Some(p) => match input.pointer(p) {
                None | Some(Value::Null) => Err(Unjudged::Missing(p.to_owned())),
                Some(Value::Object(_)) => Err(Unjudged::Shape(p.to_owned(), "an object")),
                Some(Value::Array(items)) if items.is_empty() => {
                    Err(Unjudged::Shape(p.to_owned(), "an empty array"))
                }
                Some(Value::Array(items)) => items
                    .iter()
                    .map(scalar)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        Unjudged::Shape(p.to_owned(), "an array holding arrays, objects or nulls")
                    }),
                Some(v) => Ok(vec![scalar(v).unwrap_or_default()]),
            },
        };
        let texts = texts.map(|raws| {
            raws.into_iter()
                .map(|raw| SubjectText {
                    raw,
                    mounts: None,
                    path: OnceCell::new(),
                    resolved: OnceCell::new(),
                })
                .collect()
        });
        Self { texts }
    }

    /// The same subject, resolved through `mounts` (the plugin's directory grants) when judged as a path.
    pub(super) fn with_mounts(mut self, mounts: Option<&'a Mounts>) -> Self {
        if let Ok(texts) = &mut self.texts {
            for t in texts {
                t.mounts = mounts.filter(|m| !m.is_empty());
            }
        }
        self
    }

    /// The values to judge (never empty), or why there are none.
    pub(super) fn texts(&self) -> Result<&[SubjectText<'a>], &Unjudged> {
        self.texts.as_deref()
    }

    /// The one value, when there is exactly one.
    pub(super) fn single(&self) -> Option<&SubjectText<'a>> {
        match self.texts.as_deref() {
            Ok([one]) => Some(one),
            _ => None,
        }
    }
}

fn scalar(v: &Value) -> Option<Cow<'_, str>> {
    match v {
        Value::String(s) => Some(Cow::Borrowed(s.as_str())),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        Value::Bool(b) => Some(Cow::Owned(b.to_string())),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

impl SubjectText<'_> {
    /// The value as given.
    pub(super) fn raw(&self) -> &str {
        &self.raw
    }

    /// The value normalised lexically as a path.
    pub(super) fn path(&self) -> &NormalPath {
        self.path.get_or_init(|| NormalPath::of_value(&self.raw))
    }

    /// The path as the guest's root sees it before any link is followed (`/x`, `./x` and `x` are
    /// all `x`); `None` when it climbs out of the root.
    pub(super) fn lexical_guest(&self) -> Option<String> {
        let path = self.path();
        if path.up > 0 {
            return None;
        }
        Some(match path.anchor {
            super::path::Anchor::Home if path.rest.is_empty() => "~".to_owned(),
            super::path::Anchor::Home => format!("~/{}", path.rest),
            _ => path.rest.clone(),
        })
    }

    /// Where the guest opening this path really lands; `None` when the plugin has no directories.
    pub(super) fn resolved(&self) -> Option<&Result<Resolved, Unresolved>> {
        self.resolved
            .get_or_init(|| self.mounts.map(|m| m.resolve(&self.raw)))
            .as_ref()
    }
}
