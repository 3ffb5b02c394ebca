-- Tensor- and expert-parallel degrees in the case key (#33): `series.tp` and `series.ep`, 1 for
-- every case stored before, so each keeps its key. The case-key constraint gains both columns;
-- `SQLite` cannot change a table's constraint in place, so the table is rebuilt keeping every id
-- (as 0009 did; foreign keys are off for the migration, and the view that reads it is recreated).
CREATE TABLE series_v13 (
    id        INTEGER PRIMARY KEY,
    suite     TEXT NOT NULL,
    model     TEXT NOT NULL,
    precision TEXT NOT NULL,
    phase     TEXT NOT NULL CHECK (phase IN ('decode', 'prefill')),
    batch     INTEGER NOT NULL,
    context   INTEGER NOT NULL,
    gpu_sku   TEXT NOT NULL,
    axes      TEXT NOT NULL DEFAULT '',
    tp        INTEGER NOT NULL DEFAULT 1 CHECK (tp >= 1),
    ep        INTEGER NOT NULL DEFAULT 1 CHECK (ep >= 1),
    UNIQUE (suite, model, precision, phase, batch, context, axes, tp, ep, gpu_sku)
) STRICT;
INSERT INTO series_v13 (id, suite, model, precision, phase, batch, context, gpu_sku, axes, tp, ep)
    SELECT id, suite, model, precision, phase, batch, context, gpu_sku, axes, 1, 1 FROM series;
DROP VIEW current_baselines;
DROP TABLE series;
ALTER TABLE series_v13 RENAME TO series;
CREATE VIEW current_baselines AS
    SELECT m.*
    FROM series s
    JOIN baseline_moves m
      ON m.id = (SELECT max(id) FROM baseline_moves WHERE series_id = s.id);
