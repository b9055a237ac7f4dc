//! Reading the audit log back: record by record, tolerating a torn last line, pairing each call's
//! begin and end lines, and filtering.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::begin::BeginRecord;
use super::record::{AuditRecord, Event, Outcome};
use toolhost_call::call::ErrorKind;

/// A problem met while reading the log. Only `Open` and `Io` end the iteration; the reader
/// reports a bad line and moves on to the next.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The log could not be opened.
    #[error("cannot open audit log {}", .path.display())]
    Open {
        /// The log file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// Reading failed after `line` lines.
    #[error("cannot read audit log after line {line}")]
    Io {
        /// The last line read whole.
        line: u64,
        /// What the system said.
        source: io::Error,
    },
    /// A complete line that is not a record (a write torn in the middle of the file, or damage).
    #[error("audit log line {line} is not a valid record")]
    Malformed {
        /// 1-based line number.
        line: u64,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// The last line is unfinished: a write torn by a crash (or one still in progress).
    #[error("audit log line {line} is unfinished (torn write); skipped")]
    Torn {
        /// 1-based line number.
        line: u64,
    },
}

/// Opens the log at `path` for reading, record by record.
pub fn read_records(path: impl AsRef<Path>) -> Result<Records<BufReader<File>>, ReadError> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Records::new(BufReader::new(file)))
}

/// The records of a log: one per finished call, in file order (the order calls ended), then one
/// with outcome `unfinished` for each call that began and has no end line (the daemon was killed,
/// or the call is still running), in the order they began. Yields an error item for each line
/// that is neither. Blank lines are skipped.
#[derive(Debug)]
pub struct Records<R> {
    reader: R,
    line: u64,
    buf: Vec<u8>,
    done: bool,
    /// Begin lines not yet ended, by line number; and the line of each by call id.
    open: BTreeMap<u64, BeginRecord>,
    open_lines: HashMap<String, u64>,
}

/// Just enough of a line to tell a begin line from an end line.
#[derive(Deserialize)]
struct Kind {
    #[serde(default)]
    event: Event,
}

/// One parsed line.
enum Line {
    Begin(BeginRecord),
    End(AuditRecord),
}

fn parse(text: &[u8]) -> Result<Line, serde_json::Error> {
    match serde_json::from_slice::<Kind>(text)?.event {
        Event::Begin => serde_json::from_slice(text).map(Line::Begin),
        Event::End => serde_json::from_slice(text).map(Line::End),
    }
}

impl<R: BufRead> Records<R> {
    /// Reads records from any buffered reader (a file, stdin, a byte slice).
    pub fn new(reader: R) -> Self {
        Self {
            reader,
            line: 0,
            buf: Vec::new(),
            done: false,
            open: BTreeMap::new(),
            open_lines: HashMap::new(),
        }
    }
}

impl<R: BufRead> Iterator for Records<R> {
    type Item = Result<AuditRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            self.buf.clear();
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => self.done = true,
                Ok(_) => {
                    self.line += 1;
                    let complete = self.buf.last() == Some(&b'\n');
                    let text = self.buf.trim_ascii();
                    if text.is_empty() {
                        continue;
                    }
                    return Some(match parse(text) {
                        Ok(Line::Begin(begun)) => {
                            self.open_lines.insert(begun.call_id.clone(), self.line);
                            self.open.insert(self.line, begun);
                            continue;
                        }
                        Ok(Line::End(record)) => {
                            if let Some(line) = self.open_lines.remove(&record.call_id) {
                                self.open.remove(&line);
                            }
                            Ok(record)
                        }
                        Err(_) if !complete => Err(ReadError::Torn { line: self.line }),
                        Err(source) => Err(ReadError::Malformed {
                            line: self.line,
                            source,
                        }),
                    });
                }
                Err(source) if source.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    self.done = true;
                    return Some(Err(ReadError::Io {
                        line: self.line,
                        source,
                    }));
                }
            }
        }
        let (_, begun) = self.open.pop_first()?;
        self.open_lines.remove(&begun.call_id);
        Some(Ok(begun.unfinished()))
    }
}

/// Which records to keep; every field left `None` keeps everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Only this tool.
    pub tool: Option<String>,
    /// Only this outcome.
    pub outcome: Option<Outcome>,
    /// Only failures of this kind.
    pub error_kind: Option<ErrorKind>,
    /// Only calls that started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Only calls that started before this instant.
    pub until: Option<DateTime<Utc>>,
}

impl Filter {
    /// Whether `record` passes every condition set.
    pub fn matches(&self, record: &AuditRecord) -> bool {
        self.tool.as_ref().is_none_or(|tool| *tool == record.tool)
            && self.outcome.is_none_or(|outcome| outcome == record.outcome)
            && self
                .error_kind
                .is_none_or(|kind| Some(kind) == record.error_kind)
            && self.since.is_none_or(|since| record.ts_start >= since)
            && self.until.is_none_or(|until| record.ts_start < until)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::audit::record::tests::sample;

    fn lines(records: &[AuditRecord]) -> String {
        records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect()
    }

    #[test]
    fn reports_a_torn_last_line_and_keeps_the_rest() {
        let mut text = lines(&[sample(), sample()]);
        text.push_str(r#"{"v":1,"call_id":"half a rec"#);
        let results: Vec<_> = Records::new(Cursor::new(text)).collect();
        assert_eq!(results.len(), 3);
        assert!(results[..2].iter().all(Result::is_ok));
        assert!(matches!(results[2], Err(ReadError::Torn { line: 3 })));
    }

    #[test]
    fn reports_a_malformed_middle_line_and_reads_on() {
        let text = format!("{}garbage\n\n{}", lines(&[sample()]), lines(&[sample()]));
        let results: Vec<_> = Records::new(Cursor::new(text)).collect();
        assert_eq!(results.len(), 3);
        assert!(matches!(
            results[1],
            Err(ReadError::Malformed { line: 2, .. })
        ));
        assert!(results[2].is_ok());
    }

    #[test]
    fn accepts_a_complete_record_missing_only_its_newline() {
        let text = serde_json::to_string(&sample()).unwrap();
        let results: Vec<_> = Records::new(Cursor::new(text)).collect();
        assert_eq!(results.len(), 1);
        assert!(results[0].is_ok());
    }

    #[test]
    fn pairs_begin_and_end_lines_and_reports_calls_that_never_ended() {
        let ended = AuditRecord {
            call_id: "ended".into(),
            ..sample()
        };
        let killed = AuditRecord {
            call_id: "killed".into(),
            ..sample()
        };
        let refused = AuditRecord {
            call_id: "refused".into(),
            ..sample()
        };
        let text = [
            serde_json::to_string(&killed.begin_line()).unwrap(),
            serde_json::to_string(&ended.begin_line()).unwrap(),
            serde_json::to_string(&refused).unwrap(),
            serde_json::to_string(&ended).unwrap(),
        ]
        .join("\n");
        let read: Vec<AuditRecord> = Records::new(Cursor::new(text))
            .collect::<Result<_, _>>()
            .unwrap();
        let summary: Vec<(&str, Outcome)> = read
            .iter()
            .map(|r| (r.call_id.as_str(), r.outcome))
            .collect();
        assert_eq!(
            summary,
            [
                ("refused", Outcome::Ok),
                ("ended", Outcome::Ok),
                ("killed", Outcome::Unfinished)
            ]
        );
        assert_eq!(read[2].decision, killed.decision);
    }

    #[test]
    fn reports_a_missing_file() {
        let error = read_records("/nonexistent/toolhost/audit.jsonl").unwrap_err();
        assert!(matches!(error, ReadError::Open { .. }));
    }

    #[test]
    fn filters_on_every_condition() {
        let base = sample();
        let failed = AuditRecord {
            tool: "other".into(),
            outcome: Outcome::Error,
            error_kind: Some(ErrorKind::Timeout),
            ts_start: base.ts_start + chrono::Duration::hours(1),
            ..base.clone()
        };
        let all = Filter::default();
        assert!(all.matches(&base) && all.matches(&failed));

        let by_tool = Filter {
            tool: Some("other".into()),
            ..Filter::default()
        };
        assert!(!by_tool.matches(&base) && by_tool.matches(&failed));

        let by_outcome = Filter {
            outcome: Some(Outcome::Ok),
            ..Filter::default()
        };
        assert!(by_outcome.matches(&base) && !by_outcome.matches(&failed));

        let by_kind = Filter {
            error_kind: Some(ErrorKind::Timeout),
            ..Filter::default()
        };
        assert!(!by_kind.matches(&base) && by_kind.matches(&failed));

        let window = Filter {
            since: Some(base.ts_start),
            until: Some(failed.ts_start),
            ..Filter::default()
        };
        assert!(window.matches(&base) && !window.matches(&failed));
    }
}
