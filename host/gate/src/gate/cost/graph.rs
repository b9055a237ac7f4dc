//! The schema as a graph of subschemas: which apply to the same value, which to its children
//! (and to which children), with `$ref`s resolved inside the document; and how evaluation counts
//! flow along those edges.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;
use toolhost_call::pointer;

use super::CostError;

/// How often each subschema (by node index) is evaluated for one value.
pub(super) type Profile = BTreeMap<usize, u64>;

/// Which children of a value a child applicator applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Child {
    /// `properties`: the member with this name.
    Property(String),
    /// `patternProperties`, `unevaluatedProperties`: any member (a pattern may match any name).
    AnyMember,
    /// `additionalProperties`: members this subschema's `properties` does not name.
    OtherMember,
    /// `propertyNames`: the names themselves.
    Name,
    /// `items`, `prefixItems`, `additionalItems`, `contains`, `unevaluatedItems`.
    Element,
}

/// One child of a value, as the walk distinguishes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Label {
    Member(String),
    OtherMember,
    Name,
    Element,
}

pub(super) struct Node {
    pub(super) location: String,
    /// Subschemas applied to the same value.
    same: Vec<usize>,
    /// Subschemas applied to children of the value.
    children: Vec<(Child, usize)>,
}

pub(super) struct Graph<'s> {
    root: &'s Value,
    pub(super) nodes: Vec<Node>,
    /// `$anchor` and `$dynamicAnchor` names, and `$id`s, to JSON pointers.
    anchors: HashMap<String, String>,
    ids: Vec<(String, String)>,
}

/// Keywords whose value is one subschema applied to the same value.
const SAME_ONE: &[&str] = &["not", "if", "then", "else"];
/// Keywords whose value is an array of subschemas applied to the same value.
const SAME_MANY: &[&str] = &["allOf", "anyOf", "oneOf"];
/// Keywords whose value is a map of subschemas applied to the same value.
const SAME_MAP: &[&str] = &["dependentSchemas", "dependencies"];
/// Keywords naming another subschema applied to the same value.
const REFS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

impl<'s> Graph<'s> {
    pub(super) fn build(root: &'s Value) -> Self {
        let mut graph = Self {
            root,
            nodes: Vec::new(),
            anchors: HashMap::new(),
            ids: Vec::new(),
        };
        graph.index_anchors(root, String::new());
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut pending = vec![String::new()];
        index.insert(String::new(), 0);
        graph.nodes.push(Node {
            location: String::new(),
            same: Vec::new(),
            children: Vec::new(),
        });
        while let Some(location) = pending.pop() {
            let id = index[&location];
            let (same, children) = graph.edges(&location);
            let mut intern = |target: String| -> usize {
                if let Some(&n) = index.get(&target) {
                    return n;
                }
                let n = graph.nodes.len();
                index.insert(target.clone(), n);
                graph.nodes.push(Node {
                    location: target.clone(),
                    same: Vec::new(),
                    children: Vec::new(),
                });
                pending.push(target);
                n
            };
            let same: Vec<usize> = same.into_iter().map(&mut intern).collect();
            let children: Vec<(Child, usize)> =
                children.into_iter().map(|(c, t)| (c, intern(t))).collect();
            graph.nodes[id].same = same;
            graph.nodes[id].children = children;
        }
        graph
    }

    /// Record every `$anchor`, `$dynamicAnchor` and `$id` in the document.
    fn index_anchors(&mut self, value: &Value, at: String) {
        let mut stack = vec![(value, at)];
        while let Some((value, at)) = stack.pop() {
            match value {
                Value::Object(map) => {
                    for key in ["$anchor", "$dynamicAnchor"] {
                        if let Some(Value::String(name)) = map.get(key) {
                            self.anchors.entry(name.clone()).or_insert(at.clone());
                        }
                    }
                    for key in ["$id", "id"] {
                        if let Some(Value::String(id)) = map.get(key) {
                            match id.strip_prefix('#') {
                                // Draft 4 and 6 plain-name fragments: `"id": "#foo"`.
                                Some(name) => {
                                    self.anchors.entry(name.to_owned()).or_insert(at.clone());
                                }
                                None => {
                                    self.ids.push((id.trim_end_matches('#').into(), at.clone()))
                                }
                            }
                        }
                    }
                    for (k, v) in map {
                        stack.push((v, pointer::join(&at, k)));
                    }
                }
                Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        stack.push((v, format!("{at}/{i}")));
                    }
                }
                _ => {}
            }
        }
    }

    /// The subschemas the one at `location` applies to its value, and to its value's children.
    fn edges(&self, location: &str) -> (Vec<String>, Vec<(Child, String)>) {
        let mut same = Vec::new();
        let mut children = Vec::new();
        let Some(Value::Object(map)) = self.root.pointer(location) else {
            return (same, children);
        };
        let at = |key: &str| pointer::join(location, key);
        for key in SAME_ONE {
            if map.contains_key(*key) {
                same.push(at(key));
            }
        }
        for key in SAME_MANY {
            if let Some(Value::Array(items)) = map.get(*key) {
                same.extend((0..items.len()).map(|i| format!("{}/{i}", at(key))));
            }
        }
        for key in SAME_MAP {
            if let Some(Value::Object(deps)) = map.get(*key) {
                for (name, schema) in deps {
                    if schema.is_object() || schema.is_boolean() {
                        same.push(pointer::join(&at(key), name));
                    }
                }
            }
        }
        for key in REFS {
            if let Some(Value::String(reference)) = map.get(*key)
                && let Some(target) = self.resolve(location, reference)
            {
                same.push(target);
            }
        }
        if let Some(Value::Object(props)) = map.get("properties") {
            for name in props.keys() {
                let target = pointer::join(&at("properties"), name);
                children.push((Child::Property(name.clone()), target));
            }
        }
        if let Some(Value::Object(patterns)) = map.get("patternProperties") {
            for name in patterns.keys() {
                let target = pointer::join(&at("patternProperties"), name);
                children.push((Child::AnyMember, target));
            }
        }
        for (key, child) in [
            ("additionalProperties", Child::OtherMember),
            ("unevaluatedProperties", Child::AnyMember),
            ("propertyNames", Child::Name),
            ("additionalItems", Child::Element),
            ("contains", Child::Element),
            ("unevaluatedItems", Child::Element),
        ] {
            if map.contains_key(key) {
                children.push((child, at(key)));
            }
        }
        for key in ["items", "prefixItems"] {
            match map.get(key) {
                Some(Value::Array(items)) => {
                    children.extend(
                        (0..items.len()).map(|i| (Child::Element, format!("{}/{i}", at(key)))),
                    );
                }
                Some(_) => children.push((Child::Element, at(key))),
                None => {}
            }
        }
        (same, children)
    }

    /// Where `reference`, found at `from`, points inside the document; `None` when outside it
    /// (the validator refuses those, but for the meta-schemas it knows, which are cheap).
    fn resolve(&self, from: &str, reference: &str) -> Option<String> {
        let (base, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let resource = if base.is_empty() {
            self.resource_of(from)
        } else {
            self.ids
                .iter()
                .find(|(id, _)| id == base || id.ends_with(&format!("/{base}")))
                .map(|(_, at)| at.clone())?
        };
        let fragment = percent_decode(fragment);
        let target = if fragment.is_empty() {
            resource
        } else if fragment.starts_with('/') {
            format!("{resource}{fragment}")
        } else {
            self.anchors.get(&fragment)?.clone()
        };
        self.root.pointer(&target).map(|_| target)
    }

    /// The nearest enclosing subschema with an `$id`, or the root.
    fn resource_of(&self, location: &str) -> String {
        self.ids
            .iter()
            .map(|(_, at)| at)
            .filter(|at| {
                location == at.as_str()
                    || (location.starts_with(at.as_str())
                        && location.as_bytes().get(at.len()) == Some(&b'/'))
            })
            .max_by_key(|at| at.len())
            .cloned()
            .unwrap_or_default()
    }

    /// Every node, ordered so that same-value edges point forward; a cycle is an error.
    pub(super) fn topological_order(&self) -> Result<Vec<usize>, CostError> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            Open,
            Done,
        }
        let mut mark = vec![Mark::New; self.nodes.len()];
        let mut post = Vec::with_capacity(self.nodes.len());
        for start in 0..self.nodes.len() {
            if mark[start] != Mark::New {
                continue;
            }
            // (node, next edge to follow); the stack is the current path.
            let mut stack = vec![(start, 0usize)];
            mark[start] = Mark::Open;
            while let Some((node, edge)) = stack.last_mut() {
                let node = *node;
                if let Some(&next) = self.nodes[node].same.get(*edge) {
                    *edge += 1;
                    match mark[next] {
                        Mark::New => {
                            mark[next] = Mark::Open;
                            stack.push((next, 0));
                        }
                        Mark::Open => {
                            let from = stack.iter().position(|(n, _)| *n == next).unwrap_or(0);
                            let cycle: Vec<String> = stack[from..]
                                .iter()
                                .map(|(n, _)| display(&self.nodes[*n].location).to_owned())
                                .chain([display(&self.nodes[next].location).to_owned()])
                                .collect();
                            return Err(CostError::Cycle {
                                cycle: cycle.join(" -> "),
                            });
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    post.push(node);
                    stack.pop();
                }
            }
        }
        post.reverse();
        let mut rank = vec![0; self.nodes.len()];
        for (i, &n) in post.iter().enumerate() {
            rank[n] = i;
        }
        Ok(rank)
    }

    /// `start` with every subschema it applies to the same value, transitively, counted.
    pub(super) fn closure(&self, start: Profile, rank: &[usize]) -> Profile {
        let mut reached: HashSet<usize> = start.keys().copied().collect();
        let mut stack: Vec<usize> = reached.iter().copied().collect();
        while let Some(n) = stack.pop() {
            for &next in &self.nodes[n].same {
                if reached.insert(next) {
                    stack.push(next);
                }
            }
        }
        let mut order: Vec<usize> = reached.into_iter().collect();
        order.sort_by_key(|&n| rank[n]);
        let mut counts = start;
        for n in order {
            let here = counts.get(&n).copied().unwrap_or(0);
            for &next in &self.nodes[n].same {
                let slot = counts.entry(next).or_insert(0);
                *slot = slot.saturating_add(here);
            }
        }
        counts
    }

    /// The kinds of child a value evaluated by `profile` can have, named members apart.
    pub(super) fn labels(&self, profile: &Profile) -> Vec<Label> {
        let mut names: Vec<&str> = profile
            .keys()
            .flat_map(|&n| &self.nodes[n].children)
            .filter_map(|(c, _)| match c {
                Child::Property(name) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        let mut labels: Vec<Label> = names
            .into_iter()
            .map(|n| Label::Member(n.to_owned()))
            .collect();
        labels.extend([Label::OtherMember, Label::Name, Label::Element]);
        labels
    }

    /// The subschemas applied to a child of kind `label`, before their own same-value edges.
    pub(super) fn step(&self, profile: &Profile, label: &Label) -> Profile {
        let mut next = Profile::new();
        for (&n, &count) in profile {
            let children = &self.nodes[n].children;
            let names = |name: &str| {
                children
                    .iter()
                    .any(|(c, _)| matches!(c, Child::Property(p) if p == name))
            };
            for (child, target) in children {
                let applies = match (child, label) {
                    (Child::Property(p), Label::Member(m)) => p == m,
                    (Child::AnyMember, Label::Member(_) | Label::OtherMember) => true,
                    (Child::OtherMember, Label::OtherMember) => true,
                    (Child::OtherMember, Label::Member(m)) => !names(m),
                    (Child::Name, Label::Name) | (Child::Element, Label::Element) => true,
                    _ => false,
                };
                if applies {
                    let slot = next.entry(*target).or_insert(0);
                    *slot = slot.saturating_add(count);
                }
            }
        }
        next
    }
}

/// A URI fragment with its `%XX` escapes decoded (invalid ones kept as they are).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A JSON pointer as shown to people: `/` for the root.
pub(super) fn display(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}
