//! The store's schema as numbered migrations. A database records which ones it has applied in
//! `schema_migrations`; opening applies the missing ones in order, inside one write transaction,
//! so two processes opening a new file at once do not both create it.
//!
//! Never edit an applied migration: add the next one.

/// `(version, SQL)` in order.
pub const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        r#"
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    started_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    finished_at   TEXT,
    kernel_hash   TEXT NOT NULL,
    kernel_name   TEXT NOT NULL,
    problem       TEXT NOT NULL,
    device        TEXT NOT NULL,
    driver        TEXT NOT NULL,
    compiler      TEXT NOT NULL,
    backend       TEXT NOT NULL,
    winner        TEXT
);

-- Every variant compiled (or refused by the compiler).
CREATE TABLE variants (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER REFERENCES runs(id),
    kernel_hash        TEXT NOT NULL,
    kernel_name        TEXT NOT NULL,
    point              TEXT NOT NULL,
    problem            TEXT NOT NULL,
    compiler           TEXT NOT NULL,
    backend            TEXT NOT NULL,
    arch               TEXT NOT NULL,
    binary_hash        TEXT,
    status             TEXT NOT NULL,
    reason             TEXT,
    log                TEXT,
    registers          INTEGER,
    spill_store_bytes  INTEGER,
    spill_load_bytes   INTEGER,
    smem_bytes         INTEGER,
    compile_ms         REAL,
    created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- Every outcome and measurement: one row per point per phase (search, final round).
CREATE TABLE measurements (
    id                  INTEGER PRIMARY KEY,
    run_id              INTEGER REFERENCES runs(id),
    kernel_hash         TEXT NOT NULL,
    kernel_name         TEXT NOT NULL,
    point               TEXT NOT NULL,
    point_json          TEXT NOT NULL,
    problem             TEXT NOT NULL,
    dims                TEXT NOT NULL,
    dtypes              TEXT NOT NULL,
    layouts             TEXT NOT NULL,
    device              TEXT NOT NULL,
    driver              TEXT NOT NULL,
    compiler            TEXT NOT NULL,
    backend             TEXT NOT NULL,
    phase               TEXT NOT NULL,
    status              TEXT NOT NULL,
    reason              TEXT,
    median_ms           REAL,
    min_ms              REAL,
    max_ms              REAL,
    spread              REAL,
    reps                INTEGER,
    registers           INTEGER,
    spill_store_bytes   INTEGER,
    spill_load_bytes    INTEGER,
    smem_bytes          INTEGER,
    active_warps_per_sm INTEGER,
    occupancy_limiter   TEXT,
    flops               REAL,
    bytes               REAL,
    outcome_json        TEXT NOT NULL,
    resources_json      TEXT,
    created_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE INDEX measurements_key
    ON measurements (kernel_hash, problem, device, driver, compiler, backend, point);
CREATE INDEX variants_key ON variants (kernel_hash, problem, compiler, backend, point);
"#,
    ),
    (
        2,
        r#"
-- The GPU (ordinal) a measurement ran on, when several share a search (--gpus).
ALTER TABLE measurements ADD COLUMN device_ordinal INTEGER;

-- The peak a benchmark's efficiency is measured against, per device and element types.
CREATE TABLE peaks (
    id          INTEGER PRIMARY KEY,
    device      TEXT NOT NULL,
    driver      TEXT NOT NULL,
    backend     TEXT NOT NULL,
    dtypes      TEXT NOT NULL,
    tflops      REAL NOT NULL,
    method      TEXT NOT NULL,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX peaks_key ON peaks (device, driver, backend, dtypes);
"#,
    ),
    (
        3,
        r#"
-- What produced a result: the Phobos version and a hash of the code generator's output for the
-- point (the emitted source with its headers; the IR for the interpreter). A result is reused
-- only under the same two; rows of an earlier generator (NULL here) are kept for history.
ALTER TABLE runs ADD COLUMN phobos_version TEXT;
ALTER TABLE runs ADD COLUMN winner_codegen TEXT;
ALTER TABLE variants ADD COLUMN phobos_version TEXT;
ALTER TABLE variants ADD COLUMN codegen_hash TEXT;
ALTER TABLE measurements ADD COLUMN phobos_version TEXT;
ALTER TABLE measurements ADD COLUMN codegen_hash TEXT;
CREATE INDEX measurements_generator
    ON measurements (kernel_hash, problem, device, phobos_version, codegen_hash);
"#,
    ),
];

/// The schema version this build writes.
pub fn current_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.0)
}
