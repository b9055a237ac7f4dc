//! `toolhost grant` and `toolhost revoke`: one edit to a plugin's grants in the policy file. The
//! edited file is checked as a start would check it (every setting, grants over toolhost's own
//! files, `[plugins.NAME]` names) and written only if it passes, atomically, under a lock, so two
//! edits at once never lose one. A serving daemon watches the file and applies it.
//!
//! Grants stay the operator's: this is a command on the operator's machine, and no tool a model
//! calls can reach the file (toolhost's own files are never inside a grant).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use toml_edit::DocumentMut;

use super::args::{Command, Global, GrantKind};
use super::listing::grant_words;
use super::{Failure, usage};
use toolhost_call::text::one_line;
use toolhost_config::config::edit::{self, Change, Grant};
use toolhost_config::config::{Config, Overrides};

/// `grant` or `revoke`, with the flags that shape the config (`overrides`: `--plugins`, `--dir`,
/// `--env`, `--mode`) applied to the check of the edited file as `serve` would apply them.
pub(super) fn run(command: &Command, g: &Global, overrides: &Overrides) -> Result<u8, Failure> {
    let request = match command {
        Command::Grant {
            plugin,
            kind,
            value,
            rw,
            guest,
            exclude,
        } => Request {
            config: g.config.as_deref(),
            plugin,
            kind: *kind,
            value,
            revoke: false,
            read_write: *rw,
            guest: guest.clone(),
            exclude: exclude.clone(),
        },
        Command::Revoke {
            plugin,
            kind,
            value,
        } => Request {
            config: g.config.as_deref(),
            plugin,
            kind: *kind,
            value,
            revoke: true,
            read_write: false,
            guest: None,
            exclude: Vec::new(),
        },
        _ => return Err(usage("not a grant")),
    };
    edit(request, overrides)
}

/// The edit one command asks for.
struct Request<'a> {
    /// `--config`, if given.
    config: Option<&'a Path>,
    /// The plugin.
    plugin: &'a str,
    /// What kind of grant.
    kind: GrantKind,
    /// Its value as typed.
    value: &'a str,
    /// `revoke` rather than `grant`.
    revoke: bool,
    /// A directory's `--rw`.
    read_write: bool,
    /// A directory's `--guest`.
    guest: Option<String>,
    /// A directory's `--exclude`s.
    exclude: Vec<String>,
}

/// Make the edit, check the result and write it; print what the plugin is granted now.
fn edit(req: Request<'_>, overrides: &Overrides) -> Result<u8, Failure> {
    let shown = req.config.unwrap_or(Path::new("toolhost.toml"));
    // Edit the file a symlink points to, and leave the link in place.
    let file = match shown.canonicalize() {
        Ok(real) => real,
        Err(_) => std::path::absolute(shown).map_err(|e| write_error(shown, e))?,
    };
    let base = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let grant = grant_of(&req, &base)?;
    let existed = file.exists();
    let done = (|| {
        let mut locked = lock(&file)?;
        // Read through the locked handle: the file another edit may have renamed in is not it.
        let text = std::io::read_to_string(&mut locked).map_err(|source| Failure::Read {
            what: shown.display().to_string(),
            source,
        })?;
        let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
            Failure::Refused(format!("{} does not parse: {e}", shown.display()))
        })?;
        let change = if req.revoke {
            edit::revoke(&mut doc, &base, req.plugin, &grant)?
        } else {
            edit::grant(&mut doc, &base, req.plugin, &grant)?
        };
        let edited = doc.to_string();
        let config = Config::load_as(&file, &edited, overrides)
            .map_err(|e| Failure::Refused(e.to_string()))?;
        toolhost::registry::check_sections(&config).map_err(|e| Failure::Refused(e.to_string()))?;
        if change != Change::Unchanged {
            replace(&file, &edited, &locked)?;
        }
        Ok((change, config))
    })();
    let (change, config) = match done {
        Ok(done) => done,
        Err(e) => {
            // The empty file the lock created is not left behind.
            if !existed {
                let _ = std::fs::remove_file(&file);
            }
            return Err(e);
        }
    };
    let verb = match change {
        Change::Added => "granted",
        Change::Updated => "changed",
        Change::Unchanged => "already granted",
        Change::Removed => "revoked",
    };
    let grants = grant_words(&config.policy(req.plugin).grants);
    let now = if grants.is_empty() {
        "nothing".to_owned()
    } else {
        grants.join(", ")
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{verb}: {} {} {}\n{} is now granted: {now}",
        one_line(req.plugin),
        kind_word(req.kind),
        one_line(req.value),
        one_line(req.plugin),
    )?;
    if change != Change::Unchanged {
        writeln!(
            out,
            "written to {}; a serving daemon applies it within a second",
            shown.display()
        )?;
    }
    Ok(0)
}

fn kind_word(kind: GrantKind) -> &'static str {
    match kind {
        GrantKind::Dir => "dir",
        GrantKind::Network => "network",
        GrantKind::Env => "env",
    }
}

/// The grant the request names. A directory is typed relative to the working directory and
/// written relative to the policy file's folder when it is inside it (absolute otherwise); it
/// must exist to be granted.
fn grant_of(req: &Request<'_>, base: &Path) -> Result<Grant, Failure> {
    let dir_only = req.read_write || req.guest.is_some() || !req.exclude.is_empty();
    if dir_only && (req.kind != GrantKind::Dir || req.revoke) {
        return Err(usage(
            "--rw, --guest and --exclude go with `grant PLUGIN dir PATH`",
        ));
    }
    if req.value.is_empty() || req.value.contains('\0') {
        return Err(usage("the value is empty"));
    }
    Ok(match req.kind {
        GrantKind::Dir => {
            let typed = std::path::absolute(req.value).map_err(|e| usage(e.to_string()))?;
            let host = match typed.strip_prefix(base) {
                Ok(inside) if inside.as_os_str().is_empty() => PathBuf::from("."),
                Ok(inside) => inside.to_path_buf(),
                Err(_) => typed,
            };
            Grant::Dir {
                host,
                read_write: req.read_write,
                guest: req.guest.clone(),
                exclude: req.exclude.clone(),
            }
        }
        GrantKind::Network => Grant::Network(req.value.to_owned()),
        GrantKind::Env => {
            let (name, value) = match req.value.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (req.value, None),
            };
            if req.revoke && value.is_some() {
                return Err(usage("revoke an env grant by its NAME alone"));
            }
            Grant::Env {
                name: name.to_owned(),
                value,
            }
        }
    })
}

/// The policy file, opened (created empty when missing) and locked against other edits. Another
/// edit may have replaced the file while this one waited: then the new file is locked instead.
fn lock(file: &Path) -> Result<File, Failure> {
    loop {
        let handle = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(file)
            .map_err(|e| write_error(file, e))?;
        handle.lock().map_err(|e| write_error(file, e))?;
        let held = handle.metadata().map_err(|e| write_error(file, e))?;
        match std::fs::metadata(file) {
            Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => return Ok(handle),
            _ => continue,
        }
    }
}

/// Replace `file` with `text`: a new file beside it, with the old one's permissions, synced, then
/// renamed over it, so a reader (the daemon) sees the old file or the new one, never half.
fn replace(file: &Path, text: &str, old: &File) -> Result<(), Failure> {
    let name = file.file_name().unwrap_or_default().to_string_lossy();
    let temp = file.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut new = File::create_new(&temp)?;
        new.set_permissions(old.metadata()?.permissions())?;
        new.write_all(text.as_bytes())?;
        new.sync_all()?;
        std::fs::rename(&temp, file)?;
        if let Some(dir) = file.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        write_error(file, e)
    })
}

fn write_error(file: &Path, source: std::io::Error) -> Failure {
    Failure::Write {
        what: file.display().to_string(),
        source,
    }
}
