//! An external bot: a program started with `sh -c` for each game, speaking
//! the line protocol of docs/BOTS.md on its standard input and output. Its
//! standard error passes through to ours, for its own logs.
//!
//! ```text
//! referee → bot   game <game_id> <seat>          once, first
//! referee → bot   position <ply> <move>…         each turn: the moves so far
//! referee → bot   legal <move>…                  each turn: the legal moves
//! referee → bot   card <card>                    each turn, Punto: the card to place
//! referee → bot   clock <ms>                     each turn, with a clock
//! referee → bot   go                             each turn: answer now
//! bot → referee   <move> | resign                one line
//! referee → bot   result <winner[,winner…]|draw> <REASON>   once, last; then EOF
//! ```

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::{Answer, BotError, Turn};

/// How long a program may take to exit once told the result.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A program playing one game.
pub struct ExternalBot {
    command: String,
    timeout: Duration,
    running: Option<Running>,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl ExternalBot {
    /// A bot that runs `command` (through `sh -c`) at its first turn and
    /// allows it `timeout` per move.
    pub fn new(command: String, timeout: Duration) -> ExternalBot {
        ExternalBot {
            command,
            timeout,
            running: None,
        }
    }

    async fn start(&mut self, turn: &Turn<'_>) -> Result<&mut Running, BotError> {
        if self.running.is_none() {
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(&self.command)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(BotError::Closed);
            };
            let mut running = Running {
                child,
                stdin,
                stdout: BufReader::new(stdout).lines(),
            };
            let hello = format!("game {} {}\n", turn.game_id, turn.seat);
            running.stdin.write_all(hello.as_bytes()).await?;
            self.running = Some(running);
        }
        self.running.as_mut().ok_or(BotError::Closed)
    }

    /// Sends the turn and reads the answer, within the move timeout.
    pub async fn choose(&mut self, turn: &Turn<'_>) -> Result<Answer, BotError> {
        // With a clock, no longer than the time left (plus a little grace:
        // the referee's own flag decides).
        let timeout = match turn.clock_ms {
            Some(ms) => self.timeout.min(Duration::from_millis(ms + 100)),
            None => self.timeout,
        };
        let running = self.start(turn).await?;
        let mut message = format!("position {}", turn.ply);
        for m in turn.history {
            message.push(' ');
            message.push_str(m);
        }
        message.push_str("\nlegal");
        for m in turn.legal {
            message.push(' ');
            message.push_str(m);
        }
        if let Some(card) = turn.state.and_then(crate::tools::rpc::revealed_card) {
            message.push_str(&format!("\ncard {card}"));
        }
        if let Some(ms) = turn.clock_ms {
            message.push_str(&format!("\nclock {ms}"));
        }
        message.push_str("\ngo\n");
        running.stdin.write_all(message.as_bytes()).await?;
        running.stdin.flush().await?;
        let line = tokio::time::timeout(timeout, running.stdout.next_line())
            .await
            .map_err(|_| BotError::Timeout(timeout))??
            .ok_or(BotError::Closed)?;
        let answer = line.trim();
        Ok(if answer.eq_ignore_ascii_case("resign") {
            Answer::Resign
        } else {
            Answer::Move(answer.to_string())
        })
    }

    /// Sends `result …`, closes the program's input and waits briefly for it
    /// to exit (it is killed otherwise).
    pub async fn finish(mut self, result: &str) {
        if let Some(mut running) = self.running.take() {
            let _ = running
                .stdin
                .write_all(format!("result {result}\n").as_bytes())
                .await;
            drop(running.stdin);
            if tokio::time::timeout(EXIT_GRACE, running.child.wait())
                .await
                .is_err()
            {
                let _ = running.child.kill().await;
            }
        }
    }
}
