//! Edits to one plugin's grants in the policy file, as `toolhost grant` and `toolhost revoke` make
//! them. The document keeps its comments, order and layout. Whether the result is a valid
//! configuration is [`Config`](super::Config)'s to say, exactly as at start.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table, TableLike, Value};

use self::dirs::{Dirs, grant_dir, same_dir};

use toolhost_gate::network::Destination;

/// One grant, as the operator names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// A directory (`dirs`): its host path as the file holds it (relative to the file's folder,
    /// or absolute); the guest path and `exclude` only when granting.
    Dir {
        /// The host path.
        host: PathBuf,
        /// Read-write rather than read-only.
        read_write: bool,
        /// Where the guest sees it; default `.`, or the folder's name when `.` is taken.
        guest: Option<String>,
        /// Paths inside it the plugin may never touch.
        exclude: Vec<String>,
    },
    /// An outgoing destination (`network.allow`): `scheme://host[:port]`.
    Network(String),
    /// An environment variable: a literal value (`env`), or without one the daemon's own,
    /// passed through (`env-from-host`).
    Env {
        /// The variable.
        name: String,
        /// Its value, when literal.
        value: Option<String>,
    },
}

/// What an edit did to the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The grant is new.
    Added,
    /// It was there in another form (another mode, value or kind of env), now replaced.
    Updated,
    /// It was there as asked: the document is unchanged.
    Unchanged,
    /// It was revoked.
    Removed,
}

/// Why an edit could not be made.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// A setting is written in a form this editor does not change.
    #[error("`{key}` is not {expected} as toolhost writes it: edit the file by hand")]
    Shape {
        /// The setting.
        key: String,
        /// What was expected there.
        expected: &'static str,
    },
    /// A revoke names a grant the plugin does not have.
    #[error("plugins.{plugin} has no {kind} grant {wanted:?}; it has: {}", list(.have))]
    Absent {
        /// The plugin.
        plugin: String,
        /// `dir`, `network` or `env`.
        kind: &'static str,
        /// What was named.
        wanted: String,
        /// What the plugin has of that kind.
        have: Vec<String>,
    },
    /// A network destination that does not parse.
    #[error("{0:?} is not a destination: {1}")]
    Destination(String, String),
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// Add `grant` to `plugin`'s section of `doc` (a file in `base`), creating what is missing.
pub fn grant(
    doc: &mut DocumentMut,
    base: &Path,
    plugin: &str,
    grant: &Grant,
) -> Result<Change, EditError> {
    let section = section(doc, plugin)?;
    let key = format!("plugins.{plugin}");
    match grant {
        Grant::Dir {
            host,
            read_write,
            guest,
            exclude,
        } => grant_dir(section, base, &key, host, *read_write, guest, exclude),
        Grant::Network(dest) => {
            let wanted = destination(dest)?;
            let network = sub_table(section, "network", &format!("{key}.network"))?;
            let allow = array(network, "allow", &format!("{key}.network.allow"))?;
            if allow.iter().any(|v| {
                v.as_str().and_then(|s| Destination::parse(s).ok()) == Some(wanted.clone())
            }) {
                return Ok(Change::Unchanged);
            }
            allow.push(dest.as_str());
            Ok(Change::Added)
        }
        Grant::Env { name, value } => {
            let passed = position_in(section, "env-from-host", name);
            let from_host_key = format!("{key}.env-from-host");
            match value {
                None => {
                    let literal = remove_env(section, name, &key)?;
                    if passed.is_some() {
                        return Ok(if literal {
                            Change::Updated
                        } else {
                            Change::Unchanged
                        });
                    }
                    array(section, "env-from-host", &from_host_key)?.push(name.as_str());
                    Ok(if literal {
                        Change::Updated
                    } else {
                        Change::Added
                    })
                }
                Some(value) => {
                    if let Some(i) = passed {
                        remove_at(array(section, "env-from-host", &from_host_key)?, i);
                        drop_if_empty(section, "env-from-host");
                    }
                    let env = sub_table(section, "env", &format!("{key}.env"))?;
                    let before = env.get(name).and_then(|v| v.as_str().map(str::to_owned));
                    if before.as_deref() == Some(value) {
                        return Ok(Change::Unchanged);
                    }
                    env.insert(name, Item::Value(Value::from(value.as_str())));
                    Ok(if before.is_some() || passed.is_some() {
                        Change::Updated
                    } else {
                        Change::Added
                    })
                }
            }
        }
    }
}

/// Remove `grant` from `plugin`'s section of `doc` (a file in `base`); a section left empty goes.
/// Only the grant's name counts: a directory's host path, a destination, a variable's name.
pub fn revoke(
    doc: &mut DocumentMut,
    base: &Path,
    plugin: &str,
    grant: &Grant,
) -> Result<Change, EditError> {
    let key = format!("plugins.{plugin}");
    let absent = |kind, wanted: String, have| EditError::Absent {
        plugin: plugin.to_owned(),
        kind,
        wanted,
        have,
    };
    let plugins = doc.get_mut("plugins").and_then(Item::as_table_like_mut);
    let Some(section) = plugins.and_then(|p| p.get_mut(plugin)?.as_table_like_mut()) else {
        let wanted = match grant {
            Grant::Dir { host, .. } => ("dir", host.display().to_string()),
            Grant::Network(d) => ("network", d.clone()),
            Grant::Env { name, .. } => ("env", name.clone()),
        };
        return Err(absent(wanted.0, wanted.1, Vec::new()));
    };
    match grant {
        Grant::Dir { host, .. } => {
            let dirs = Dirs::of(section, &format!("{key}.dirs"))?;
            let have = dirs.hosts();
            let i = have
                .iter()
                .position(|h| same_dir(&base.join(h), &base.join(host)))
                .ok_or_else(|| absent("dir", host.display().to_string(), have.clone()))?;
            dirs.remove(i);
            drop_if_empty(section, "dirs");
        }
        Grant::Network(dest) => {
            let wanted = destination(dest)?;
            let network = section.get_mut("network").and_then(Item::as_table_like_mut);
            let Some(network) = network else {
                return Err(absent("network", dest.clone(), Vec::new()));
            };
            let allow = array(network, "allow", &format!("{key}.network.allow"))?;
            let have: Vec<String> = allow
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            let i = have
                .iter()
                .position(|s| Destination::parse(s).ok() == Some(wanted.clone()))
                .ok_or_else(|| absent("network", dest.clone(), have.clone()))?;
            remove_at(allow, i);
            let emptied = allow.is_empty();
            // An empty allowlist is an error; with nothing else in it, the section means nothing.
            let only_allow = network
                .iter()
                .all(|(k, _)| k == "allow" || k == "allow-private");
            if emptied && only_allow {
                section.remove("network");
            }
        }
        Grant::Env { name, .. } => {
            let from_host = array(section, "env-from-host", &format!("{key}.env-from-host"))?;
            let passed = position(from_host, name).map(|i| remove_at(from_host, i));
            drop_if_empty(section, "env-from-host");
            let literal = remove_env(section, name, &key)?;
            if passed.is_none() && !literal {
                let mut have: Vec<String> = section
                    .get("env")
                    .and_then(Item::as_table_like)
                    .map(|t| t.iter().map(|(k, _)| k.to_owned()).collect())
                    .unwrap_or_default();
                have.extend(env_from_host(section));
                return Err(absent("env", name.clone(), have));
            }
        }
    }
    if section.is_empty() {
        let plugins = doc
            .get_mut("plugins")
            .and_then(Item::as_table_like_mut)
            .expect("the section was found in it");
        plugins.remove(plugin);
        if plugins.is_empty() {
            doc.remove("plugins");
        }
    }
    Ok(Change::Removed)
}

/// `plugin`'s section, created (as `[plugins.NAME]`) when missing.
fn section<'d>(doc: &'d mut DocumentMut, plugin: &str) -> Result<&'d mut dyn TableLike, EditError> {
    let plugins = doc.entry("plugins").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let plugins = plugins
        .as_table_like_mut()
        .ok_or_else(|| EditError::Shape {
            key: "plugins".into(),
            expected: "a table",
        })?;
    plugins
        .entry(plugin)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| EditError::Shape {
            key: format!("plugins.{plugin}"),
            expected: "a table",
        })
}

/// The table at `name` in `parent`, created (as a `[…]` section) when missing.
fn sub_table<'t>(
    parent: &'t mut dyn TableLike,
    name: &str,
    key: &str,
) -> Result<&'t mut dyn TableLike, EditError> {
    parent
        .entry(name)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_like_mut()
        .ok_or_else(|| EditError::Shape {
            key: key.into(),
            expected: "a table",
        })
}

/// The array at `name` in `parent`, created empty when missing.
fn array<'t>(
    parent: &'t mut dyn TableLike,
    name: &str,
    key: &str,
) -> Result<&'t mut Array, EditError> {
    parent
        .entry(name)
        .or_insert_with(|| Item::Value(Value::Array(Array::new())))
        .as_array_mut()
        .ok_or_else(|| EditError::Shape {
            key: key.into(),
            expected: "an array",
        })
}

/// Remove an array or table at `name` that holds nothing.
fn drop_if_empty(parent: &mut dyn TableLike, name: &str) {
    let empty = parent.get(name).is_some_and(|item| match item {
        Item::Value(Value::Array(a)) => a.is_empty(),
        Item::ArrayOfTables(a) => a.is_empty(),
        other => other.as_table_like().is_some_and(|t| t.is_empty()),
    });
    if empty {
        parent.remove(name);
    }
}

/// Remove `name` from the section's literal `env`; whether it was there.
fn remove_env(section: &mut dyn TableLike, name: &str, key: &str) -> Result<bool, EditError> {
    let Some(env) = section.get_mut("env") else {
        return Ok(false);
    };
    let env = env.as_table_like_mut().ok_or_else(|| EditError::Shape {
        key: format!("{key}.env"),
        expected: "a table",
    })?;
    let removed = env.remove(name).is_some();
    drop_if_empty(section, "env");
    Ok(removed)
}

fn env_from_host(section: &dyn TableLike) -> Vec<String> {
    let names = section.get("env-from-host").and_then(Item::as_array);
    names
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Remove the `i`th value; a value that becomes the first loses the space before it.
fn remove_at(array: &mut Array, i: usize) {
    array.remove(i);
    if i == 0
        && let Some(first) = array.get_mut(0)
    {
        first.decor_mut().set_prefix("");
    }
}

fn position(array: &Array, name: &str) -> Option<usize> {
    array.iter().position(|v| v.as_str() == Some(name))
}

/// Where `value` is in the array at `name` of `section`, if it is.
fn position_in(section: &dyn TableLike, name: &str, value: &str) -> Option<usize> {
    position(section.get(name)?.as_array()?, value)
}

fn destination(text: &str) -> Result<Destination, EditError> {
    Destination::parse(text).map_err(|e| EditError::Destination(text.to_owned(), e.to_string()))
}

mod dirs;
#[cfg(test)]
mod tests;
