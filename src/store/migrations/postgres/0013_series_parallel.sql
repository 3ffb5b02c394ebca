-- Tensor- and expert-parallel degrees in the case key (sqlite/0013_series_parallel.sql).
-- PostgreSQL changes the constraint in place where SQLite rebuilds the table; the columns
-- follow `axes`, as in the rebuilt SQLite table.
ALTER TABLE series ADD COLUMN tp BIGINT NOT NULL DEFAULT 1 CHECK (tp >= 1);
ALTER TABLE series ADD COLUMN ep BIGINT NOT NULL DEFAULT 1 CHECK (ep >= 1);
ALTER TABLE series DROP CONSTRAINT series_case_key;
ALTER TABLE series ADD CONSTRAINT series_case_key
    UNIQUE (suite, model, precision, phase, batch, context, axes, tp, ep, gpu_sku);
