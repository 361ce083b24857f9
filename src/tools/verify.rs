//! `punct-referee verify` and `punct-referee referee-key`: checking a
//! record and its receipt offline, and the referee key's rotation
//! (docs/RECEIPTS.md).

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::service::receipts::{self, KeyList, Receipt, RefereeKey, key};

/// What `verify` checks (see [`run`]).
#[derive(Debug, Clone, clap::Args)]
pub struct VerifyArgs {
    /// The game record (ExportGame's `record`, as a spectator exports it),
    /// or a JSON object with `record` and `receipt` (then RECEIPT may be
    /// left out). `-`: standard input.
    pub record: PathBuf,
    /// The receipt: its JSON object, in a file.
    pub receipt: Option<PathBuf>,
    /// The referee's public key: 32 bytes in base64 or hex, or a key list
    /// (`/.well-known/punct-referee.json`, the keyring file).
    #[arg(long, value_name = "FILE", conflicts_with = "keys")]
    pub key: Option<PathBuf>,
    /// The referee's key list: a file, or an `http://` address of its
    /// `/.well-known/punct-referee.json`.
    #[arg(long, value_name = "URL-OR-FILE", required_unless_present = "key")]
    pub keys: Option<String>,
}

/// What `referee-key` does.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum KeyCommand {
    /// Make a new referee key, keeping the old public key listed in the
    /// keyring so receipts it signed still verify; restart the servers
    /// (every replica) to sign with the new key.
    Rotate(KeyFileArgs),
    /// Print the public key list (what `/.well-known/punct-referee.json`
    /// serves), creating the key when missing.
    Show(KeyFileArgs),
}

/// Where the referee key is (as `serve` finds it).
#[derive(Debug, Clone, clap::Args)]
pub struct KeyFileArgs {
    /// The data directory, whose `referee.key` is used unless
    /// `--referee-key` names the file.
    #[arg(long, env = "PUNCT_REFEREE_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
    /// The referee key file.
    #[arg(long, env = "PUNCT_REFEREE_REFEREE_KEY", value_name = "FILE")]
    pub referee_key: Option<PathBuf>,
}

impl KeyFileArgs {
    fn path(&self) -> PathBuf {
        self.referee_key
            .clone()
            .unwrap_or_else(|| self.data_dir.join(key::KEY_FILE))
    }
}

/// `referee-key rotate|show`: the text to print.
pub fn key_command(command: &KeyCommand) -> Result<String, String> {
    match command {
        KeyCommand::Rotate(args) => {
            let (old, new) = RefereeKey::rotate(&args.path()).map_err(|e| e.to_string())?;
            Ok(format!(
                "referee key rotated: {old} -> {new} (restart every replica; {old} stays listed)\n"
            ))
        }
        KeyCommand::Show(args) => {
            let k = RefereeKey::load_or_create(&args.path()).map_err(|e| e.to_string())?;
            Ok(format!("{}\n", k.key_list().to_json()))
        }
    }
}

/// Exit statuses of `verify`.
const VERIFIED: u8 = 0;
const NOT_VERIFIED: u8 = 1;
const USAGE: u8 = 2;

/// `verify`: prints what was verified (exit 0), or why not (exit 1); a
/// file that cannot be read exits 2.
pub fn run(args: &VerifyArgs) -> ExitCode {
    match check(args) {
        Ok(Ok(text)) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            ExitCode::from(VERIFIED)
        }
        Ok(Err(e)) => {
            eprintln!("not verified ({}): {e}", e.code());
            ExitCode::from(NOT_VERIFIED)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(USAGE)
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("standard input: {e}"))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The record and the receipt text `args` name.
fn record_and_receipt(args: &VerifyArgs) -> Result<(String, String), String> {
    let record = read(&args.record)?;
    if let Some(path) = &args.receipt {
        return Ok((record, read(path)?));
    }
    // A JSON object carrying both.
    let both: serde_json::Value = serde_json::from_str(&record).map_err(|_| {
        "no RECEIPT given, and RECORD is no JSON object with `record` and `receipt`".to_string()
    })?;
    let text = both.get("record").and_then(|r| r.as_str());
    let receipt = match both.get("receipt") {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(v @ serde_json::Value::Object(_)) => Some(v.to_string()),
        _ => None,
    };
    match (text, receipt) {
        (Some(text), Some(receipt)) => Ok((text.to_string(), receipt)),
        _ => Err("RECORD's JSON object lacks `record` or `receipt`".to_string()),
    }
}

/// The keys `args` name.
fn keys(args: &VerifyArgs) -> Result<KeyList, String> {
    if let Some(path) = &args.key {
        let text = read(path)?;
        if text.trim_start().starts_with('{') {
            return KeyList::parse(&text, &path.display().to_string()).map_err(|e| e.to_string());
        }
        let t = text.trim();
        let bytes = crate::games::parse_seed(t)
            .map(|b| b.to_vec())
            .or_else(|| receipts::b64_decode(t))
            .filter(|b| b.len() == 32)
            .ok_or_else(|| {
                format!(
                    "{}: not a public key (32 bytes in base64 or hex, or a key list)",
                    path.display()
                )
            })?;
        return Ok(KeyList::single(&bytes));
    }
    let Some(source) = &args.keys else {
        return Err("give --key or --keys".to_string());
    };
    let text = if let Some(rest) = source.strip_prefix("http://") {
        fetch(rest).map_err(|e| format!("{source}: {e}"))?
    } else if source.starts_with("https://") {
        return Err(format!(
            "{source}: https is not fetched here: save it (curl -o keys.json {source}) and give the file"
        ));
    } else {
        read(Path::new(source))?
    };
    KeyList::parse(&text, source).map_err(|e| e.to_string())
}

/// A plain HTTP/1.1 GET of `host[:port]/path`: the body of a 200 answer.
fn fetch(rest: &str) -> Result<String, String> {
    use std::net::ToSocketAddrs as _;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let authority = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let timeout = std::time::Duration::from_secs(10);
    let addr = authority
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut stream =
        std::net::TcpStream::connect_timeout(&addr, timeout).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream
        .take(1 << 20)
        .read_to_end(&mut answer)
        .map_err(|e| e.to_string())?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("answered `{status}`"));
    }
    if head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    }) {
        return Ok(unchunk(body));
    }
    Ok(body.to_string())
}

/// The body of a chunked answer.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The check: `Err` for a file problem, `Ok(Err)` when it does not verify.
fn check(args: &VerifyArgs) -> Result<Result<String, receipts::VerifyError>, String> {
    let (record, receipt) = record_and_receipt(args)?;
    let keys = keys(args)?;
    let receipt = match Receipt::parse(&receipt) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let catalog = crate::service::grpc::games::catalog();
    Ok(
        receipts::verify_game(&record, &receipt, &keys, &catalog).map(|p| {
            let winners: Vec<String> = p.outcome.winners.iter().map(u32::to_string).collect();
            format!(
                "verified: game {} ({}), {} moves, {} (winners: {}), chain head {}, signed by key {} (ended at {} ms)\n",
                p.game_id,
                p.game,
                p.ply,
                p.outcome.reason,
                if winners.is_empty() { "none".to_string() } else { winners.join(", ") },
                p.chain_head,
                p.key_id,
                p.ended_unix_ms
            )
        }),
    )
}
