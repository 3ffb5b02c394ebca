-- A suite's free axes in the case key (`axes = { mode = [...] }`): `series.axes` holds them as
-- the key writes them (`attn=flash/mode=graphs`, names sorted), '' for a case without axes, so
-- every stored case keeps its key. The case-key constraint gains the column; `SQLite` cannot
-- change a table's constraint in place, so the table is rebuilt keeping every id (foreign
-- keys are off for the migration, see `schema::migrate`; the view that reads it is recreated).
CREATE TABLE series_v9 (
    id        INTEGER PRIMARY KEY,
    suite     TEXT NOT NULL,
    model     TEXT NOT NULL,
    precision TEXT NOT NULL,
    phase     TEXT NOT NULL CHECK (phase IN ('decode', 'prefill')),
    batch     INTEGER NOT NULL,
    context   INTEGER NOT NULL,
    gpu_sku   TEXT NOT NULL,
    axes      TEXT NOT NULL DEFAULT '',
    UNIQUE (suite, model, precision, phase, batch, context, axes, gpu_sku)
) STRICT;
INSERT INTO series_v9 (id, suite, model, precision, phase, batch, context, gpu_sku, axes)
    SELECT id, suite, model, precision, phase, batch, context, gpu_sku, '' FROM series;
DROP VIEW current_baselines;
DROP TABLE series;
ALTER TABLE series_v9 RENAME TO series;
CREATE VIEW current_baselines AS
    SELECT m.*
    FROM series s
    JOIN baseline_moves m
      ON m.id = (SELECT max(id) FROM baseline_moves WHERE series_id = s.id);
