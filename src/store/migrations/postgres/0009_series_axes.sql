-- A suite's free axes in the case key (sqlite/0009_series_axes.sql). PostgreSQL changes the
-- constraint in place (its name is the one PostgreSQL gave 0001's `UNIQUE`) where SQLite rebuilds
-- the table; the column order matches the rebuilt SQLite table.
ALTER TABLE series ADD COLUMN axes TEXT NOT NULL DEFAULT '';
ALTER TABLE series DROP CONSTRAINT series_suite_model_precision_phase_batch_context_gpu_sku_key;
ALTER TABLE series ADD CONSTRAINT series_case_key
    UNIQUE (suite, model, precision, phase, batch, context, axes, gpu_sku);
