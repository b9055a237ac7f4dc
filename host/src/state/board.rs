//! The fleet's questions in PostgreSQL: each daemon puts its questions in one table that every
//! console reads, an answer is one statement that only the first answer passes, and every change
//! is announced with `NOTIFY` on one channel, which each daemon hears on a connection of its own
//! (`LISTEN`), so that a waiting call wakes as soon as another daemon's console answers it, with
//! no polling per question. A daemon whose heartbeat stops has its questions withdrawn by the
//! sweep, announced the same way.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_postgres::AsyncMessage;
use tokio_postgres::types::Type;

use super::StateError;
use super::postgres::{CHANNEL, NOW, Postgres, announce, fail};
use crate::exec::{AnswerError, Board, BoardError, Notice, Question, Verdict};

/// How long an ended question's row is kept past its expiry, to tell a late answer from an
/// unknown id.
const KEPT_MS: i64 = 10 * 60 * 1000;

/// The questions of daemon `daemon`, and every other daemon's, in the shared database.
pub(super) struct Questions {
    pg: Postgres,
    daemon: String,
}

impl Questions {
    /// The board of `daemon`, and what the other daemons say about questions from now on.
    pub(super) fn open(pg: Postgres, daemon: &str) -> (Self, mpsc::UnboundedReceiver<Notice>) {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(listen(pg.clone(), tx));
        let board = Self {
            pg,
            daemon: daemon.to_owned(),
        };
        (board, rx)
    }

    async fn query(
        &self,
        sql: &str,
        params: &[(&(dyn tokio_postgres::types::ToSql + Sync), Type)],
    ) -> Result<Vec<tokio_postgres::Row>, BoardError> {
        self.pg
            .query_typed(sql, params)
            .await
            .map_err(|e| BoardError(e.to_string()))
    }
}

fn broken(e: impl std::fmt::Display) -> BoardError {
    BoardError(e.to_string())
}

/// A row's question as the console shows it, naming its daemon.
fn shown(body: &str, daemon: String) -> Result<Value, BoardError> {
    let mut question: Value = serde_json::from_str(body).map_err(broken)?;
    if let Some(fields) = question.as_object_mut() {
        fields.insert("daemon".into(), Value::String(daemon));
    }
    Ok(question)
}

#[async_trait]
impl Board for Questions {
    async fn post(&self, question: &Question) -> Result<(), BoardError> {
        let body = serde_json::to_string(question).map_err(broken)?;
        let (asked, expires) = (
            question.asked_at.timestamp_millis(),
            question.expires_at.timestamp_millis(),
        );
        let sql = format!(
            "WITH q AS (INSERT INTO questions \
               (id, daemon, body, input_sha256, asked_ms, expires_ms) \
               VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, daemon) {}",
            announce("asked")
        );
        self.query(
            &sql,
            &[
                (&question.id, Type::TEXT),
                (&self.daemon, Type::TEXT),
                (&body, Type::TEXT),
                (&question.input_sha256, Type::TEXT),
                (&asked, Type::INT8),
                (&expires, Type::INT8),
            ],
        )
        .await
        .map(drop)
    }

    async fn withdraw(&self, id: &str) -> Result<(), BoardError> {
        let sql = format!(
            "WITH q AS (UPDATE questions SET answer = 'withdrawn' \
               WHERE id = $1 AND answer IS NULL RETURNING id, daemon) {}",
            announce("ended")
        );
        self.query(&sql, &[(&id, Type::TEXT)]).await.map(drop)
    }

    async fn elsewhere(&self) -> Result<Vec<Value>, BoardError> {
        let sql = format!(
            "SELECT body, daemon FROM questions \
             WHERE answer IS NULL AND daemon <> $1 AND expires_ms > {NOW} ORDER BY asked_ms"
        );
        let rows = self.query(&sql, &[(&self.daemon, Type::TEXT)]).await?;
        rows.iter()
            .map(|r| {
                let body: String = r.try_get(0).map_err(broken)?;
                shown(&body, r.try_get(1).map_err(broken)?)
            })
            .collect()
    }

    async fn find(&self, id: &str) -> Result<Option<Value>, BoardError> {
        let rows = self
            .query(
                "SELECT body, daemon FROM questions WHERE id = $1 AND answer IS NULL",
                &[(&id, Type::TEXT)],
            )
            .await?;
        match rows.first() {
            Some(r) => {
                let body: String = r.try_get(0).map_err(broken)?;
                shown(&body, r.try_get(1).map_err(broken)?).map(Some)
            }
            None => Ok(None),
        }
    }

    async fn answer(
        &self,
        id: &str,
        input_sha256: &str,
        verdict: &Verdict,
    ) -> Result<Result<(), AnswerError>, BoardError> {
        let word = if verdict.approve {
            "approved"
        } else {
            "declined"
        };
        let sql = format!(
            "WITH q AS (UPDATE questions SET answer = $3, operator = $4 \
               WHERE id = $1 AND answer IS NULL AND input_sha256 = $2 AND expires_ms > {NOW} \
               RETURNING id, daemon) {}",
            announce("ended")
        );
        let won = self
            .query(
                &sql,
                &[
                    (&id, Type::TEXT),
                    (&input_sha256, Type::TEXT),
                    (&word, Type::TEXT),
                    (&verdict.operator, Type::TEXT),
                ],
            )
            .await?;
        if !won.is_empty() {
            return Ok(Ok(()));
        }
        // Why not: say precisely, as the queue of one daemon does.
        let sql = format!(
            "SELECT answer IS NULL AND expires_ms > {NOW}, input_sha256 FROM questions \
             WHERE id = $1"
        );
        let rows = self.query(&sql, &[(&id, Type::TEXT)]).await?;
        let Some(row) = rows.first() else {
            return Ok(Err(AnswerError::Unknown(id.to_owned())));
        };
        let open: bool = row.try_get(0).map_err(broken)?;
        let digest: String = row.try_get(1).map_err(broken)?;
        Ok(Err(if open && digest != input_sha256 {
            AnswerError::Mismatched
        } else {
            AnswerError::Ended(id.to_owned())
        }))
    }

    async fn verdict(&self, id: &str) -> Result<Option<Option<Verdict>>, BoardError> {
        let rows = self
            .query(
                "SELECT answer, operator FROM questions WHERE id = $1",
                &[(&id, Type::TEXT)],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let answer: Option<String> = row.try_get(0).map_err(broken)?;
        let operator: Option<String> = row.try_get(1).map_err(broken)?;
        Ok(match answer.as_deref() {
            None => None,
            Some(word @ ("approved" | "declined")) => Some(Some(Verdict {
                approve: word == "approved",
                operator: operator.unwrap_or_default(),
            })),
            Some(_) => Some(None),
        })
    }

    async fn attend(&self, here_ms: i64, health: &Value) -> Result<i64, BoardError> {
        // One round trip: say this daemon's, hear the longest of the others'.
        let sql = format!(
            "WITH said AS (INSERT INTO fleet_daemons (daemon, console_until_ms, health, updated_ms) \
               VALUES ($1, {NOW} + $2, $3, {NOW}) \
               ON CONFLICT (daemon) DO UPDATE SET console_until_ms = EXCLUDED.console_until_ms, \
                 health = EXCLUDED.health, updated_ms = EXCLUDED.updated_ms) \
             SELECT COALESCE(MAX(console_until_ms) - {NOW}, 0)::BIGINT FROM fleet_daemons \
             WHERE daemon <> $1 AND console_until_ms > {NOW}"
        );
        let health = health.to_string();
        let rows = self
            .query(
                &sql,
                &[
                    (&self.daemon, Type::TEXT),
                    (&here_ms, Type::INT8),
                    (&health, Type::TEXT),
                ],
            )
            .await?;
        rows.first()
            .map_or(Ok(0), |r| r.try_get::<_, i64>(0).map_err(broken))
    }

    async fn daemons(&self) -> Result<Vec<Value>, BoardError> {
        let sql = format!(
            "SELECT daemon, health, ({NOW} - updated_ms)::BIGINT FROM fleet_daemons ORDER BY daemon"
        );
        let rows = self.query(&sql, &[]).await?;
        rows.iter()
            .map(|r| {
                let health: String = r.try_get(1).map_err(broken)?;
                Ok(serde_json::json!({
                    "daemon": r.try_get::<_, String>(0).map_err(broken)?,
                    "health": serde_json::from_str::<Value>(&health).map_err(broken)?,
                    "said_ms_ago": r.try_get::<_, i64>(2).map_err(broken)?,
                }))
            })
            .collect()
    }

    fn daemon(&self) -> &str {
        &self.daemon
    }

    async fn show_calls(&self, calls: &Value) -> Result<(), BoardError> {
        super::calls::show(&self.pg, &self.daemon, calls)
            .await
            .map_err(broken)
    }

    async fn calls_elsewhere(&self) -> Result<Vec<(String, Value)>, BoardError> {
        super::calls::elsewhere(&self.pg, &self.daemon)
            .await
            .map_err(broken)
    }

    async fn cancel_elsewhere(
        &self,
        id: &str,
        operator: &str,
    ) -> Result<Option<String>, BoardError> {
        super::calls::cancel(&self.pg, &self.daemon, id, operator)
            .await
            .map_err(broken)
    }
}

/// How long a silent daemon stays in the fleet's health, shown stopped or silent.
const SILENT_KEPT_MS: i64 = 60 * 1000;

/// Forget the attendance and health of daemons silent for [`SILENT_KEPT_MS`].
async fn forget_daemons(pg: &Postgres) -> Result<(), StateError> {
    let sql = format!("DELETE FROM fleet_daemons WHERE updated_ms < {NOW} - $1");
    pg.query_typed(&sql, &[(&SILENT_KEPT_MS, Type::INT8)])
        .await
        .map(drop)
}

/// Withdraw the questions of daemons silent since `silent_since` (other than `except`), telling
/// every console, and forget ended questions long past their expiry.
pub(super) async fn sweep(
    pg: &Postgres,
    silent_since: i64,
    except: &str,
) -> Result<(), StateError> {
    let sql = format!(
        "WITH q AS (UPDATE questions SET answer = 'withdrawn' \
           WHERE answer IS NULL AND daemon <> $2 \
             AND daemon NOT IN (SELECT id FROM daemons WHERE heartbeat_ms >= $1) \
           RETURNING id, daemon) {}",
        announce("ended")
    );
    pg.query_typed(&sql, &[(&silent_since, Type::INT8), (&except, Type::TEXT)])
        .await?;
    let forget = format!("DELETE FROM questions WHERE expires_ms < {NOW} - $1");
    pg.query_typed(&forget, &[(&KEPT_MS, Type::INT8)]).await?;
    super::calls::sweep(pg, silent_since, except).await?;
    forget_daemons(pg).await
}

/// Hear the channel on a connection of its own for as long as `notices` has a reader; after a
/// lost connection, say that notices may have been missed.
async fn listen(pg: Postgres, notices: mpsc::UnboundedSender<Notice>) {
    let mut missed = false;
    while !notices.is_closed() {
        match hear(&pg, &notices, missed).await {
            Ok(()) => return,
            Err(e) => tracing::warn!(
                "the fleet's question channel was lost ({e}); listening again in a second"
            ),
        }
        missed = true;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// One connection's worth of [`listen`]: `Ok` once nobody reads the notices.
async fn hear(
    pg: &Postgres,
    notices: &mpsc::UnboundedSender<Notice>,
    missed: bool,
) -> Result<(), StateError> {
    let (client, mut connection) = pg.connect().await?;
    let (tx, mut heard) = mpsc::unbounded_channel();
    let polling = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    let _ = tx.send(Ok(n.payload().to_owned()));
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = tx.send(Err(fail(e)));
                    return;
                }
            }
        }
        let _ = tx.send(Err(StateError::Postgres("the connection closed".into())));
    });
    let listening = client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(fail);
    if let Err(e) = listening {
        polling.abort();
        return Err(e);
    }
    if missed && notices.send(Notice::Missed).is_err() {
        polling.abort();
        return Ok(());
    }
    let result = loop {
        let Some(payload) = heard.recv().await else {
            break Err(StateError::Postgres("the connection closed".into()));
        };
        let notice = match payload {
            Ok(payload) => parse(&payload),
            Err(e) => break Err(e),
        };
        if let Some(notice) = notice
            && notices.send(notice).is_err()
        {
            break Ok(());
        }
    };
    polling.abort();
    drop(client);
    result
}

/// A notice from its payload (`{"event", "daemon", "id"}`).
fn parse(payload: &str) -> Option<Notice> {
    let v: Value = serde_json::from_str(payload).ok()?;
    let daemon = v["daemon"].as_str()?.to_owned();
    let id = v["id"].as_str()?.to_owned();
    match v["event"].as_str()? {
        "asked" => Some(Notice::Asked { daemon, id }),
        "ended" => Some(Notice::Ended { daemon, id }),
        "calls" => Some(Notice::Calls { daemon }),
        "cancel" => Some(Notice::Cancel {
            daemon,
            id,
            operator: v["operator"].as_str()?.to_owned(),
        }),
        _ => None,
    }
}
