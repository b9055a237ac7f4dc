//! The audit writer: appends whole lines, never interleaved; reports failures, never decides on them.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use toolhost_config::config::{AuditOptions, OnFailure};

use super::line;
use super::record::AuditRecord;

/// A failure to open or append to the audit log.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The log file or its directory could not be created or opened.
    #[error("cannot open audit log {}", .path.display())]
    Open {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A record could not be appended (or synced).
    #[error("cannot append to audit log {}", .path.display())]
    Write {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A record could not be turned into JSON.
    #[error("cannot encode audit record")]
    Encode(#[source] serde_json::Error),
}

/// The append-only audit log. Thread-safe through `&self`; share it in an `Arc`.
#[derive(Debug)]
pub struct AuditLog {
    sink: Option<Sink>,
    options: AuditOptions,
    failures: AtomicU64,
    failing: AtomicBool,
}

#[derive(Debug)]
struct Sink {
    path: PathBuf,
    state: Mutex<SinkState>,
    /// Records appended so far; bumped under `state` once a line is fully written.
    written: AtomicU64,
    /// With `sync`: how many records are known to be on disk. One `fdatasync` covers every record
    /// written before it starts, so calls that finish while a sync runs share the next one instead of
    /// each waiting for its own; and the write lock is never held across a sync.
    synced: Mutex<u64>,
    /// The same file, for `fdatasync` outside the write lock.
    sync_file: File,
}

#[derive(Debug)]
struct SinkState {
    file: File,
    /// The last append failed, perhaps part-way through a line: start the next one on a fresh line.
    torn: bool,
}

impl AuditLog {
    /// Opens (creating it and its directories if needed) the log at `path` for appending.
    /// On unix a new file is created `0o600` and new directories `0o700`. If the file ends in a
    /// torn line (a crash mid-write), a newline is appended so the next record starts clean.
    pub fn open(path: impl AsRef<Path>, options: AuditOptions) -> Result<Self, AuditError> {
        let path = path.as_ref().to_path_buf();
        let open_error = |source| AuditError::Open {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dirs(parent).map_err(open_error)?;
        }
        let mut open = OpenOptions::new();
        open.append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let mut file = open.open(&path).map_err(open_error)?;
        warn_if_readable_by_others(&path, &file);
        if ends_with_torn_line(&path, &file).map_err(open_error)? {
            tracing::warn!(path = %path.display(), "audit log ends in a torn line; starting a new line");
            file.write_all(b"\n").map_err(open_error)?;
        }
        let sync_file = file.try_clone().map_err(open_error)?;
        Ok(Self {
            sink: Some(Sink {
                path,
                state: Mutex::new(SinkState { file, torn: false }),
                written: AtomicU64::new(0),
                synced: Mutex::new(0),
                sync_file,
            }),
            options,
            failures: AtomicU64::new(0),
            failing: AtomicBool::new(false),
        })
    }

    /// A log that records nothing: `write` always succeeds and no call is ever refused.
    pub fn disabled() -> Self {
        Self {
            sink: None,
            options: AuditOptions::default(),
            failures: AtomicU64::new(0),
            failing: AtomicBool::new(false),
        }
    }

    /// Starts the record of a call arriving now (see [`AuditRecord::begin`]), keeping the input
    /// itself only when the options say so.
    pub fn begin(
        &self,
        call_id: impl Into<String>,
        origin: impl Into<String>,
        tool: impl Into<String>,
        input: &Value,
    ) -> AuditRecord {
        let mut record = AuditRecord::begin(call_id, origin, tool, input);
        if self.includes_input() {
            record.input = Some(input.clone());
        }
        record
    }

    /// Appends `record` as one line. The JSON is built before taking the lock; the line goes
    /// out in one `write_all` under a short mutex, so concurrent writers never interleave. With
    /// `sync`, the `fdatasync` happens after that mutex is released, and is shared by every record
    /// written before it started. An `input` is dropped unless the options include inputs, whoever filled it in.
    ///
    /// On failure this logs with `tracing::error!` and returns the error; the caller applies
    /// [`on_failure`](Self::on_failure).
    pub fn write(&self, record: &AuditRecord) -> Result<(), AuditError> {
        self.append(&record.call_id, |keep_input| line::end(record, keep_input))
    }

    /// Appends the begin line of `record`, a call about to run (see [`AuditRecord::begin_line`]),
    /// the same way as [`write`](Self::write): whole, flushed to the kernel before this returns (and
    /// synced with `sync`), so that a daemon killed while the call runs still shows it.
    pub fn write_begin(&self, record: &AuditRecord) -> Result<(), AuditError> {
        self.append(&record.call_id, |keep_input| {
            line::begin(record, keep_input)
        })
    }

    /// Encodes a line (`encode` is told whether inputs may be kept) and appends it.
    fn append(
        &self,
        call_id: &str,
        encode: impl FnOnce(bool) -> Result<Vec<u8>, serde_json::Error>,
    ) -> Result<(), AuditError> {
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        let result = encode(self.options.include_input)
            .map_err(AuditError::Encode)
            .and_then(|line| sink.append(&line, self.options.sync));
        match &result {
            Ok(()) => self.failing.store(false, Ordering::Relaxed),
            Err(error) => {
                self.failing.store(true, Ordering::Relaxed);
                let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::error!(
                    path = %sink.path.display(),
                    call_id,
                    failures,
                    error = %error,
                    cause = %error_source(error),
                    "audit record NOT written"
                );
            }
        }
        result
    }

    /// True when a failed write should refuse the call: the log is enabled and configured
    /// with `on-failure = "refuse"`.
    pub fn refuses_on_failure(&self) -> bool {
        self.sink.is_some() && self.options.on_failure == OnFailure::Refuse
    }

    /// The configured failure policy.
    pub fn on_failure(&self) -> OnFailure {
        self.options.on_failure
    }

    /// True when the most recent write failed; the pipeline may refuse calls up front rather
    /// than run them and then fail to record them.
    pub fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    /// How many writes have failed since the log was opened.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Whether inputs are stored in records.
    pub fn includes_input(&self) -> bool {
        self.sink.is_some() && self.options.include_input
    }

    /// Whether this log records anything.
    pub fn is_enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// The log file, when enabled.
    pub fn path(&self) -> Option<&Path> {
        self.sink.as_ref().map(|sink| sink.path.as_path())
    }

    /// The options the log was opened with.
    pub fn options(&self) -> &AuditOptions {
        &self.options
    }
}

impl Sink {
    fn append(&self, line: &[u8], sync: bool) -> Result<(), AuditError> {
        let error = |source| AuditError::Write {
            path: self.path.clone(),
            source,
        };
        let mine = {
            // A panic while holding the lock cannot leave the file in a state worse than a failed
            // write, which `torn` already handles; keep logging.
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let result = state.write_line(line);
            state.torn = result.is_err();
            result.map_err(error)?;
            self.written.fetch_add(1, Ordering::AcqRel) + 1
        };
        if sync {
            let mut synced = self.synced.lock().unwrap_or_else(PoisonError::into_inner);
            if *synced < mine {
                // Every record counted here was fully written before this sync starts.
                let covered = self.written.load(Ordering::Acquire);
                self.sync_file.sync_data().map_err(error)?;
                *synced = covered;
            }
        }
        Ok(())
    }
}

impl SinkState {
    fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        if self.torn {
            // Readers skip the empty line this makes when the failed write wrote nothing.
            self.file.write_all(b"\n")?;
        }
        self.file.write_all(line)
    }
}

fn error_source(error: &AuditError) -> String {
    std::error::Error::source(error).map_or_else(String::new, ToString::to_string)
}

fn create_private_dirs(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn ends_with_torn_line(path: &Path, file: &File) -> io::Result<bool> {
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(false);
    }
    let mut reader = File::open(path)?;
    reader.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    reader.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path, file: &File) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = file.metadata()
        && meta.is_file()
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            path = %path.display(),
            mode = format!("{:o}", meta.permissions().mode() & 0o777),
            "audit log is accessible to other users"
        );
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path, _file: &File) {}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
