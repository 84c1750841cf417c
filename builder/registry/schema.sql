-- The registry: the only revisioned store. Append-only: rows are inserted, never updated or
-- deleted. Every row carries the revision that wrote it, so the hash chain in `revisions` covers
-- it. Column names are the API's field names where the spec fixes them.

CREATE TABLE IF NOT EXISTS revisions (
    revision   INTEGER PRIMARY KEY,
    ts_commit  TEXT NOT NULL,          -- UTC, microseconds, never goes backwards
    kind       TEXT NOT NULL,          -- captura | importacion | anotacion | backfill | serie
    summary    TEXT NOT NULL,          -- canonical JSON: what the write was
    prev_hash  TEXT NOT NULL,          -- sha256:<hex> of the previous revision (zeros for 1)
    hash       TEXT NOT NULL           -- sha256:<hex> over prev_hash and this revision's rows
);

CREATE TABLE IF NOT EXISTS executions (
    id         TEXT PRIMARY KEY,
    revision   INTEGER NOT NULL,
    kind       TEXT NOT NULL,          -- capture | import | backfill | annotate | series
    fuente     TEXT,
    started_at TEXT NOT NULL,
    outcome    TEXT NOT NULL,
    detalle    TEXT NOT NULL           -- canonical JSON
);
CREATE INDEX IF NOT EXISTS executions_revision ON executions(revision);

CREATE TABLE IF NOT EXISTS evidence (
    id                 TEXT PRIMARY KEY,
    revision           INTEGER NOT NULL,
    ejecucion_id       TEXT NOT NULL,
    sha256             TEXT NOT NULL,  -- bare hex of the stored bytes
    size               INTEGER NOT NULL,
    content_type       TEXT NOT NULL,
    http_status        INTEGER,        -- NULL when there was no HTTP exchange
    http_reason        TEXT,
    headers            TEXT NOT NULL,  -- JSON list of [name, value] exactly as received
    identidad_consulta TEXT NOT NULL,
    capturado_en       TEXT NOT NULL,
    truncated          INTEGER NOT NULL  -- 1 when the body was cut at the size cap
);
CREATE INDEX IF NOT EXISTS evidence_revision ON evidence(revision);
CREATE INDEX IF NOT EXISTS evidence_sha256 ON evidence(sha256);

CREATE TABLE IF NOT EXISTS observations (
    id                 TEXT PRIMARY KEY,
    revision_creada    INTEGER NOT NULL,
    moneda             TEXT NOT NULL,
    serie              TEXT NOT NULL,
    fecha_serie        TEXT NOT NULL,
    compra             TEXT NOT NULL,
    venta              TEXT NOT NULL,
    compra_cruda       TEXT NOT NULL,
    venta_cruda        TEXT NOT NULL,
    fuente             TEXT NOT NULL,
    identidad_consulta TEXT NOT NULL,
    fragmento          TEXT NOT NULL,
    version_parser     TEXT NOT NULL,
    capturado_en       TEXT NOT NULL,
    ejecucion_id       TEXT NOT NULL,
    evidencia_id       TEXT NOT NULL,
    supersedes         TEXT            -- the observation this one corrects, fixed at creation
);
CREATE INDEX IF NOT EXISTS observations_date
    ON observations(moneda, serie, fecha_serie, revision_creada);
CREATE INDEX IF NOT EXISTS observations_revision ON observations(revision_creada);
CREATE UNIQUE INDEX IF NOT EXISTS observations_successor
    ON observations(supersedes) WHERE supersedes IS NOT NULL;

CREATE TABLE IF NOT EXISTS events (
    id             TEXT PRIMARY KEY,
    revision       INTEGER NOT NULL,
    seq            INTEGER NOT NULL,   -- order within the revision
    tipo           TEXT NOT NULL,
    ts             TEXT NOT NULL,
    ejecucion_id   TEXT NOT NULL,
    evidencia_id   TEXT,
    observacion_id TEXT,               -- NULL for a failure, which has no observation
    fuente         TEXT NOT NULL,
    moneda         TEXT NOT NULL,
    serie          TEXT NOT NULL,
    fecha_serie    TEXT,               -- the observation's date, or a failure's expected date
    detalle        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_revision ON events(revision, seq);
CREATE INDEX IF NOT EXISTS events_observation ON events(observacion_id, revision, seq);
CREATE INDEX IF NOT EXISTS events_expected ON events(serie, fecha_serie, tipo);
-- Failures only (about 1% of events): coverage lists their dates at every re-render.
CREATE INDEX IF NOT EXISTS events_failures
    ON events(serie, fecha_serie) WHERE observacion_id IS NULL;

CREATE TABLE IF NOT EXISTS cotejos (
    id                         TEXT PRIMARY KEY,
    revision                   INTEGER NOT NULL,
    seq                        INTEGER NOT NULL,
    observacion_id             TEXT NOT NULL,
    contraparte                TEXT NOT NULL,
    contraparte_observacion_id TEXT NOT NULL,
    contraparte_fecha          TEXT NOT NULL,
    resultado                  TEXT NOT NULL,   -- ok | discrepante
    regla                      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS cotejos_revision ON cotejos(revision, seq);
CREATE INDEX IF NOT EXISTS cotejos_observation ON cotejos(observacion_id, revision);

CREATE TABLE IF NOT EXISTS annotations (
    id            TEXT PRIMARY KEY,
    revision      INTEGER NOT NULL,
    fecha         TEXT NOT NULL,
    moneda        TEXT NOT NULL,
    serie         TEXT,                -- NULL: every series
    texto         TEXT NOT NULL,
    compra        TEXT,
    venta         TEXT,
    actor         TEXT NOT NULL,
    justificacion TEXT NOT NULL,
    ts            TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS annotations_revision ON annotations(revision);

CREATE TABLE IF NOT EXISTS manifest_entries (
    id           TEXT PRIMARY KEY,
    revision     INTEGER NOT NULL,
    fuente       TEXT NOT NULL,
    moneda       TEXT NOT NULL,
    serie        TEXT NOT NULL,
    fecha        TEXT NOT NULL,
    estado       TEXT NOT NULL,        -- nd_fuente: the source declares no data for the date
    ejecucion_id TEXT NOT NULL,
    evidencia_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS manifest_revision ON manifest_entries(revision);
CREATE INDEX IF NOT EXISTS manifest_date ON manifest_entries(serie, fecha);

CREATE TABLE IF NOT EXISTS series_switches (
    id            TEXT PRIMARY KEY,
    revision      INTEGER NOT NULL,
    moneda        TEXT NOT NULL,
    serie         TEXT NOT NULL,
    estado        TEXT NOT NULL,       -- produccion
    actor         TEXT NOT NULL,
    justificacion TEXT NOT NULL,
    ts            TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS series_switches_revision ON series_switches(revision);
