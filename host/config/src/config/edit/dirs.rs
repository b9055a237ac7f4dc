//! Directory grants: `dirs`, written either as an array of inline tables or as `[[…dirs]]`.

use std::path::Path;

use toml_edit::{Array, ArrayOfTables, InlineTable, Item, TableLike, Value};

use super::{Change, EditError, remove_at};

pub(super) fn grant_dir(
    section: &mut dyn TableLike,
    base: &Path,
    key: &str,
    host: &Path,
    read_write: bool,
    guest: &Option<String>,
    exclude: &[String],
) -> Result<Change, EditError> {
    let mode = if read_write { "rw" } else { "ro" };
    let dirs = Dirs::of(section, &format!("{key}.dirs"))?;
    let hosts = dirs.hosts();
    if let Some(i) = hosts
        .iter()
        .position(|h| same_dir(&base.join(h), &base.join(host)))
    {
        let entry = dirs.entry(i);
        let before = entry.get("mode").and_then(Item::as_str).unwrap_or("ro");
        if before == mode && exclude.is_empty() && guest.is_none() {
            return Ok(Change::Unchanged);
        }
        entry.insert("mode", Item::Value(mode.into()));
        if let Some(g) = guest {
            entry.insert("guest", Item::Value(g.as_str().into()));
        }
        if !exclude.is_empty() {
            entry.insert(
                "exclude",
                Item::Value(Value::Array(exclude.iter().collect())),
            );
        }
        entry.fmt();
        return Ok(Change::Updated);
    }
    let guests = dirs.guests();
    let guest = guest.clone().or_else(|| {
        // `.` is the first directory's; another one goes where its name says.
        guests.iter().any(|g| g == ".").then(|| {
            host.file_name()
                .map_or_else(|| "dir".into(), |n| n.to_string_lossy().into_owned())
        })
    });
    let mut entry = InlineTable::new();
    entry.insert("host", host.to_string_lossy().as_ref().into());
    if let Some(g) = guest {
        entry.insert("guest", g.as_str().into());
    }
    entry.insert("mode", mode.into());
    if !exclude.is_empty() {
        entry.insert("exclude", Value::Array(exclude.iter().collect()));
    }
    dirs.push(entry);
    Ok(Change::Added)
}

/// A section's `dirs`, in either way TOML writes an array of tables.
pub(super) enum Dirs<'a> {
    Inline(&'a mut Array),
    Tables(&'a mut ArrayOfTables),
}

impl<'a> Dirs<'a> {
    pub(super) fn of(section: &'a mut dyn TableLike, key: &str) -> Result<Self, EditError> {
        let item = section
            .entry("dirs")
            .or_insert_with(|| Item::Value(Value::Array(Array::new())));
        let shape = || EditError::Shape {
            key: key.into(),
            expected: "an array of tables",
        };
        match item {
            Item::ArrayOfTables(a) => Ok(Self::Tables(a)),
            Item::Value(Value::Array(a)) if a.iter().all(Value::is_inline_table) => {
                Ok(Self::Inline(a))
            }
            _ => Err(shape()),
        }
    }

    fn field(&self, name: &str, default: &str) -> Vec<String> {
        let get = |t: &dyn TableLike| {
            t.get(name)
                .and_then(Item::as_str)
                .unwrap_or(default)
                .to_owned()
        };
        match self {
            Self::Inline(a) => a
                .iter()
                .filter_map(Value::as_inline_table)
                .map(|t| get(t))
                .collect(),
            Self::Tables(a) => a.iter().map(|t| get(t)).collect(),
        }
    }

    pub(super) fn hosts(&self) -> Vec<String> {
        self.field("host", "")
    }

    fn guests(&self) -> Vec<String> {
        self.field("guest", ".")
    }

    fn entry(self, i: usize) -> &'a mut dyn TableLike {
        match self {
            Self::Inline(a) => a
                .get_mut(i)
                .and_then(Value::as_inline_table_mut)
                .expect("an index of hosts()"),
            Self::Tables(a) => a.get_mut(i).expect("an index of hosts()"),
        }
    }

    fn push(self, entry: InlineTable) {
        match self {
            Self::Inline(a) => a.push(entry),
            Self::Tables(a) => a.push(entry.into_table()),
        }
    }

    pub(super) fn remove(self, i: usize) {
        match self {
            Self::Inline(a) => remove_at(a, i),
            Self::Tables(a) => {
                a.remove(i);
            }
        }
    }
}

/// Whether two host paths name one directory: the same once symlinks are resolved, or, for a
/// path that does not exist (any more), the same as written.
pub(super) fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    }
}
