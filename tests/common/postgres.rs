//! The PostgreSQL server of the tests (scripts/with-postgres.sh exports
//! `PUNCT_REFEREE_TEST_DATABASE_URL`): its URL, a client, a fresh database.

use punct_referee::service::storage::postgres::with_database;

/// The test server's URL; `None` (the test skips, saying so) when it is
/// not set, unless `PUNCT_REFEREE_REQUIRE_POSTGRES` makes that a failure.
pub fn test_database_url() -> Option<String> {
    match std::env::var("PUNCT_REFEREE_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("PUNCT_REFEREE_REQUIRE_POSTGRES").is_none(),
                "PUNCT_REFEREE_REQUIRE_POSTGRES is set but PUNCT_REFEREE_TEST_DATABASE_URL is not: \
                 run the tests under scripts/with-postgres.sh"
            );
            eprintln!("PUNCT_REFEREE_TEST_DATABASE_URL is not set: PostgreSQL tests not run");
            None
        }
    }
}

/// A client of the database at `url`, its connection driven by a task.
pub async fn sql(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test server");
    tokio::spawn(connection);
    client
}

/// A fresh, empty database named `{prefix}_{random}` on the test server,
/// its URL.
pub async fn fresh_database(server: &str, prefix: &str) -> String {
    let name = format!("{prefix}_{:016x}", rand::random::<u64>());
    sql(server)
        .await
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create the test database");
    with_database(server, &name)
}
