//! Changes announced between replicas: every committed change of a game
//! is sent on [`NOTIFY_CHANNEL`] in its transaction, and a connection of
//! its own listens for them ([`super::PostgresStorage::notices`]).

use std::time::Duration;

use deadpool_postgres::Transaction;
use tokio::sync::mpsc;
use tokio_postgres::NoTls;

use super::super::{StorageError, unix_ms};
use super::pg_error;

/// The channel on which every committed change of a game is announced
/// (payload: the game id and the database's time of the change, Unix
/// milliseconds).
pub const NOTIFY_CHANNEL: &str = "referee_games";

/// What the database says about games (see [`PostgresStorage::notices`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Game `game_id` changed (a move, a draw offer, an ending committed),
    /// `lag` after the change by the database's clock.
    Changed {
        /// The game.
        game_id: String,
        /// How long the notification took to arrive (clocks permitting).
        lag: Option<Duration>,
    },
    /// The listening connection was (re)opened: notifications sent while it
    /// was down are lost, so everything followed is to be read again.
    Listening,
}

/// Listens on [`NOTIFY_CHANNEL`] until `tx` is dropped (see
/// [`PostgresStorage::notices`]).
pub(super) async fn listen(
    config: tokio_postgres::Config,
    target: String,
    tx: mpsc::UnboundedSender<Notice>,
) {
    use tokio_postgres::AsyncMessage;
    let mut failures = 0u32;
    while !tx.is_closed() {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (note_tx, mut note_rx) = mpsc::unbounded_channel();
                // The connection is driven here; its notifications go on.
                let driver = tokio::spawn(async move {
                    loop {
                        match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                            Some(Ok(AsyncMessage::Notification(n))) => {
                                if note_tx.send(n.payload().to_string()).is_err() {
                                    return;
                                }
                            }
                            Some(Ok(_)) => {}
                            Some(Err(_)) | None => return,
                        }
                    }
                });
                if client
                    .batch_execute(&format!("LISTEN {NOTIFY_CHANNEL}"))
                    .await
                    .is_ok()
                {
                    failures = 0;
                    if tx.send(Notice::Listening).is_err() {
                        driver.abort();
                        return;
                    }
                    while let Some(payload) = note_rx.recv().await {
                        let mut words = payload.split(' ');
                        let game_id = words.next().unwrap_or_default().to_string();
                        let lag = words
                            .next()
                            .and_then(|ms| ms.parse::<i64>().ok())
                            .map(|at| {
                                let now = unix_ms(std::time::SystemTime::now());
                                Duration::from_millis(now.saturating_sub(at).max(0) as u64)
                            });
                        if tx.send(Notice::Changed { game_id, lag }).is_err() {
                            driver.abort();
                            return;
                        }
                    }
                }
                driver.abort();
                tracing::debug!(database = %target, "notification connection lost; reopening");
            }
            Err(e) => {
                failures += 1;
                if failures == 1 {
                    tracing::warn!(error = %pg_error(&target, e), "cannot listen for game changes");
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Announces a committed change of `game_id` on [`NOTIFY_CHANNEL`]
/// (delivered when the transaction commits, not before).
pub(super) async fn notify(
    tx: &Transaction<'_>,
    game_id: &str,
    target: &str,
) -> Result<(), StorageError> {
    let stmt = tx
        .prepare_cached(
            "SELECT pg_notify('referee_games',
                $1 || ' ' || floor(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint::text)",
        )
        .await
        .map_err(|e| pg_error(target, e))?;
    tx.execute(&stmt, &[&game_id])
        .await
        .map_err(|e| pg_error(target, e))?;
    Ok(())
}
