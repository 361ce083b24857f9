BEGIN;
CREATE TABLE games (
    id                 TEXT PRIMARY KEY,
    game               TEXT NOT NULL,
    variant            TEXT NOT NULL,
    options            TEXT NOT NULL,
    white_token_sha256 TEXT NOT NULL,
    black_token_sha256 TEXT NOT NULL,
    clock_mode         TEXT NOT NULL,
    clock_initial_ms   INTEGER,
    clock_increment_ms INTEGER,
    clock_per_move_ms  INTEGER,
    first_move_ms      INTEGER,
    labels             TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('in_progress', 'finished', 'expired')),
    winner             TEXT,
    reason             TEXT,
    ply                INTEGER NOT NULL,
    draw_offer         TEXT,
    created_at_ms      INTEGER NOT NULL,
    updated_at_ms      INTEGER NOT NULL,
    finished_at_ms     INTEGER
);
CREATE INDEX games_by_status ON games (status);
CREATE TABLE moves (
    game_id      TEXT NOT NULL REFERENCES games (id),
    ply          INTEGER NOT NULL,
    seat         TEXT NOT NULL,
    notation     TEXT NOT NULL,
    request_id   TEXT,
    clock_ms     INTEGER NOT NULL,
    played_at_ms INTEGER NOT NULL,
    PRIMARY KEY (game_id, ply)
) WITHOUT ROWID;
PRAGMA user_version = 1;
COMMIT;
