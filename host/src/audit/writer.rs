//! The audit writer: appends whole lines, never interleaved; reports failures, never decides on them.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::AuditRecord;

/// What the pipeline should do with a call whose audit record could not be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Refuse the call (`audit_unavailable`): no unaudited calls. The default, because an audit
    /// log that silently stops recording is worse than a host that stops answering.
    #[default]
    Refuse,
    /// Let the call proceed; the failure is still logged with `tracing::error!`.
    Continue,
}

/// How the audit log behaves; embeddable in the config file (kebab-case keys, all optional).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct AuditOptions {
    /// Store each call's input in its record, not just its hash. By default this is disabled:
    /// inputs may carry secrets or personal data.
    pub include_input: bool,
    /// `fdatasync` after every record, so a record survives a power cut. By default this is
    /// disabled: each record still reaches the kernel before `write` returns.
    pub sync: bool,
    /// What to do with a call when its record cannot be written.
    pub on_failure: OnFailure,
}

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
        let Some(sink) = &self.sink else {
            return Ok(());
        };
        let result = self
            .encode(record)
            .and_then(|line| sink.append(&line, self.options.sync));
        match &result {
            Ok(()) => self.failing.store(false, Ordering::Relaxed),
            Err(error) => {
                self.failing.store(true, Ordering::Relaxed);
                let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::error!(
                    path = %sink.path.display(),
                    call_id = %record.call_id,
                    failures,
                    error = %error,
                    cause = %error_source(error),
                    "audit record NOT written"
                );
            }
        }
        result
    }

    fn encode(&self, record: &AuditRecord) -> Result<Vec<u8>, AuditError> {
        let encoded = if record.input.is_some() && !self.options.include_input {
            serde_json::to_vec(&AuditRecord {
                input: None,
                ..record.clone()
            })
        } else {
            serde_json::to_vec(record)
        };
        let mut line = encoded.map_err(AuditError::Encode)?;
        line.push(b'\n');
        Ok(line)
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
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::audit::record::tests::sample;
    use crate::audit::testdir::TestDir;

    fn options(include_input: bool) -> AuditOptions {
        AuditOptions {
            include_input,
            ..AuditOptions::default()
        }
    }

    #[test]
    fn round_trips_records_through_the_file() {
        let dir = TestDir::new();
        let path = dir.path().join("nested/dirs/audit.jsonl");
        let log = AuditLog::open(&path, options(true)).unwrap();
        let first = AuditRecord {
            input: Some(json!({"url": "https://example.com"})),
            ..sample()
        };
        let second = log.begin("id-2", "cli", "nope", &json!([1, 2]));
        log.write(&first).unwrap();
        log.write(&second).unwrap();
        let back: Vec<_> = crate::audit::read_records(&path)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(back, vec![first, second]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn drops_inputs_unless_configured() {
        let dir = TestDir::new();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, options(false)).unwrap();
        assert!(
            log.begin("id", "cli", "t", &json!({"secret": 1}))
                .input
                .is_none()
        );
        let record = AuditRecord {
            input: Some(json!({"secret": 1})),
            ..sample()
        };
        log.write(&record).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("secret") && !text.contains("\"input\""),
            "{text}"
        );
    }

    #[test]
    fn concurrent_writers_never_interleave_lines() {
        const THREADS: usize = 16;
        const PER_THREAD: usize = 500;
        let dir = TestDir::new();
        let path = dir.path().join("audit.jsonl");
        let log = Arc::new(AuditLog::open(&path, options(true)).unwrap());
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        // Lines of very different sizes, some larger than a pipe buffer.
                        let padding = "x".repeat((i * 37 + t * 101) % 9000);
                        let record = AuditRecord {
                            call_id: format!("{t}-{i}"),
                            input: Some(json!({ "padding": padding })),
                            ..sample()
                        };
                        log.write(&record).unwrap();
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), THREADS * PER_THREAD);
        let mut ids = HashSet::new();
        for line in text.lines() {
            let record: AuditRecord = serde_json::from_str(line).unwrap();
            assert!(ids.insert(record.call_id), "duplicate record");
        }
        assert_eq!(ids.len(), THREADS * PER_THREAD);
    }

    #[test]
    fn synced_writers_share_syncs_and_lose_no_record() {
        let dir = TestDir::new();
        let path = dir.path().join("audit.jsonl");
        let log = Arc::new(
            AuditLog::open(
                &path,
                AuditOptions {
                    sync: true,
                    ..AuditOptions::default()
                },
            )
            .unwrap(),
        );
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || {
                    for i in 0..25 {
                        let record = AuditRecord {
                            call_id: format!("{t}-{i}"),
                            ..sample()
                        };
                        log.write(&record).unwrap();
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let sink = log.sink.as_ref().unwrap();
        assert_eq!(*sink.synced.lock().unwrap(), 200);
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 200);
    }

    #[test]
    fn starts_a_fresh_line_after_a_torn_tail() {
        let dir = TestDir::new();
        let path = dir.path().join("audit.jsonl");
        fs::write(&path, "{\"v\":1,\"call_id\":\"cut sh").unwrap();
        let log = AuditLog::open(&path, options(false)).unwrap();
        log.write(&sample()).unwrap();
        let results: Vec<_> = crate::audit::read_records(&path).unwrap().collect();
        assert_eq!(results.len(), 2);
        assert!(results[0].is_err());
        assert_eq!(results[1].as_ref().unwrap(), &sample());
    }

    #[test]
    fn fails_to_open_under_a_file() {
        let dir = TestDir::new();
        let blocker = dir.path().join("not-a-dir");
        fs::write(&blocker, "").unwrap();
        let error = AuditLog::open(blocker.join("audit.jsonl"), options(false)).unwrap_err();
        assert!(matches!(error, AuditError::Open { .. }), "{error:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn returns_and_counts_write_failures() {
        // /dev/full accepts the open and fails every write with ENOSPC, even for root.
        let log = AuditLog::open("/dev/full", AuditOptions::default()).unwrap();
        assert!(log.refuses_on_failure());
        let error = log.write(&sample()).unwrap_err();
        assert!(matches!(error, AuditError::Write { .. }), "{error:?}");
        assert!(log.write(&sample()).is_err());
        assert!(log.is_failing());
        assert_eq!(log.failures(), 2);
    }

    #[test]
    fn disabled_log_accepts_everything_and_refuses_nothing() {
        let log = AuditLog::disabled();
        log.write(&sample()).unwrap();
        assert!(!log.refuses_on_failure() && !log.is_enabled() && log.path().is_none());
    }

    #[test]
    fn options_deserialize_from_kebab_case_with_defaults() {
        let options: AuditOptions =
            serde_json::from_value(json!({"include-input": true, "on-failure": "continue"}))
                .unwrap();
        assert_eq!(
            options,
            AuditOptions {
                include_input: true,
                sync: false,
                on_failure: OnFailure::Continue
            }
        );
        assert!(serde_json::from_value::<AuditOptions>(json!({"include_input": true})).is_err());
    }
}
