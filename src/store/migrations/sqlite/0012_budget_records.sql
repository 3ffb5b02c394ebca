-- A budgeted night's records as tables of their own (`utilgate run --budget`), where before they
-- travelled as JSON under keys inside other columns: the night's (`runs.config_json`
-- "budget_night") in `run_budgets` and its unstarted cases in `run_budget_unstarted`, each case's
-- (`results.summary_json` "budget") in `result_budgets`, each repeat's cost (`results.summary_json`
-- "cost", which the planner reads back) in `result_repeat_costs`. The rows of older runs are read
-- out of their JSON here, which stays as it was (history is append-only); a record the old
-- readers could not read (a field missing, not a number, a count not a whole number) is left
-- out, as they left it out.
CREATE TABLE run_budgets (
    run_id                  INTEGER PRIMARY KEY REFERENCES runs (id),
    budget_s                REAL NOT NULL,
    grace_s                 REAL NOT NULL,
    planned_s               REAL NOT NULL,
    reserve_s               REAL NOT NULL,
    budget_to_resolve_all_s REAL,
    used_s                  REAL NOT NULL,
    stopped                 INTEGER NOT NULL CHECK (stopped IN (0, 1))
) STRICT;

CREATE TABLE run_budget_unstarted (
    run_id   INTEGER NOT NULL REFERENCES run_budgets (run_id),
    ordinal  INTEGER NOT NULL,
    case_key TEXT NOT NULL,
    PRIMARY KEY (run_id, ordinal)
) STRICT, WITHOUT ROWID;

CREATE TABLE result_budgets (
    result_id       INTEGER PRIMARY KEY REFERENCES results (id),
    note            TEXT NOT NULL CHECK (note IN ('resolved', 'no_history', 'over_budget',
                                                  'too_noisy')),
    planned_repeats INTEGER NOT NULL,
    steps           INTEGER NOT NULL,
    first_repeats   INTEGER NOT NULL,
    confirm_repeats INTEGER NOT NULL,
    time_s          REAL NOT NULL,
    stop            TEXT NOT NULL CHECK (stop IN ('decisive', 'suspect', 'planned', 'budget',
                                                  'error', 'not_started')),
    needed_repeats  INTEGER,
    needed_s        REAL
) STRICT;

CREATE TABLE result_repeat_costs (
    result_id    INTEGER NOT NULL REFERENCES results (id),
    repeat       INTEGER NOT NULL,
    wall_s       REAL NOT NULL,
    steps_s      REAL NOT NULL,
    steps        INTEGER NOT NULL,
    warmup_s     REAL NOT NULL,
    warmup_steps INTEGER NOT NULL,
    PRIMARY KEY (result_id, repeat)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER run_budgets_append_only_update BEFORE UPDATE ON run_budgets
    BEGIN SELECT RAISE(ABORT, 'run budgets are append-only'); END;
CREATE TRIGGER run_budgets_append_only_delete BEFORE DELETE ON run_budgets
    BEGIN SELECT RAISE(ABORT, 'run budgets are append-only'); END;
CREATE TRIGGER run_budget_unstarted_append_only_update BEFORE UPDATE ON run_budget_unstarted
    BEGIN SELECT RAISE(ABORT, 'run budgets are append-only'); END;
CREATE TRIGGER run_budget_unstarted_append_only_delete BEFORE DELETE ON run_budget_unstarted
    BEGIN SELECT RAISE(ABORT, 'run budgets are append-only'); END;
CREATE TRIGGER result_budgets_append_only_update BEFORE UPDATE ON result_budgets
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER result_budgets_append_only_delete BEFORE DELETE ON result_budgets
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER result_repeat_costs_append_only_update BEFORE UPDATE ON result_repeat_costs
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
CREATE TRIGGER result_repeat_costs_append_only_delete BEFORE DELETE ON result_repeat_costs
    BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;

-- The records of older runs, out of their JSON.
INSERT INTO run_budgets (run_id, budget_s, grace_s, planned_s, reserve_s,
                         budget_to_resolve_all_s, used_s, stopped)
    SELECT id,
           json_extract(config_json, '$.budget_night.budget_s'),
           json_extract(config_json, '$.budget_night.grace_s'),
           json_extract(config_json, '$.budget_night.planned_s'),
           json_extract(config_json, '$.budget_night.reserve_s'),
           json_extract(config_json, '$.budget_night.budget_to_resolve_all_s'),
           json_extract(config_json, '$.budget_night.used_s'),
           json_extract(config_json, '$.budget_night.stopped')
    FROM runs
    WHERE config_json LIKE '%"budget_night"%' AND json_valid(config_json)
      AND json_type(config_json, '$.budget_night.budget_s') IN ('integer', 'real')
      AND json_type(config_json, '$.budget_night.grace_s') IN ('integer', 'real')
      AND json_type(config_json, '$.budget_night.planned_s') IN ('integer', 'real')
      AND json_type(config_json, '$.budget_night.reserve_s') IN ('integer', 'real')
      AND coalesce(json_type(config_json, '$.budget_night.budget_to_resolve_all_s'), 'null')
          IN ('integer', 'real', 'null')
      AND json_type(config_json, '$.budget_night.used_s') IN ('integer', 'real')
      AND json_type(config_json, '$.budget_night.stopped') IN ('true', 'false')
      AND json_type(config_json, '$.budget_night.not_started') = 'array';

INSERT INTO run_budget_unstarted (run_id, ordinal, case_key)
    SELECT b.run_id, j.key, j.value
    FROM run_budgets b
    JOIN runs r ON r.id = b.run_id,
         json_each(r.config_json, '$.budget_night.not_started') j;

INSERT INTO result_budgets (result_id, note, planned_repeats, steps, first_repeats,
                            confirm_repeats, time_s, stop, needed_repeats, needed_s)
    SELECT id,
           json_extract(summary_json, '$.budget.note'),
           json_extract(summary_json, '$.budget.planned_repeats'),
           json_extract(summary_json, '$.budget.steps'),
           json_extract(summary_json, '$.budget.first_repeats'),
           json_extract(summary_json, '$.budget.confirm_repeats'),
           json_extract(summary_json, '$.budget.time_s'),
           json_extract(summary_json, '$.budget.stop'),
           json_extract(summary_json, '$.budget.needed_repeats'),
           json_extract(summary_json, '$.budget.needed_s')
    FROM results
    WHERE summary_json LIKE '%"budget"%' AND json_valid(summary_json)
      AND json_extract(summary_json, '$.budget.note')
          IN ('resolved', 'no_history', 'over_budget', 'too_noisy')
      AND json_type(summary_json, '$.budget.planned_repeats') = 'integer'
      AND json_extract(summary_json, '$.budget.planned_repeats') >= 0
      AND json_type(summary_json, '$.budget.steps') = 'integer'
      AND json_extract(summary_json, '$.budget.steps') >= 0
      AND json_type(summary_json, '$.budget.first_repeats') = 'integer'
      AND json_extract(summary_json, '$.budget.first_repeats') >= 0
      AND json_type(summary_json, '$.budget.confirm_repeats') = 'integer'
      AND json_extract(summary_json, '$.budget.confirm_repeats') >= 0
      AND json_type(summary_json, '$.budget.time_s') IN ('integer', 'real')
      AND json_extract(summary_json, '$.budget.stop')
          IN ('decisive', 'suspect', 'planned', 'budget', 'error', 'not_started')
      AND coalesce(json_type(summary_json, '$.budget.needed_repeats'), 'null')
          IN ('integer', 'null')
      AND coalesce(json_extract(summary_json, '$.budget.needed_repeats'), 0) >= 0
      AND coalesce(json_type(summary_json, '$.budget.needed_s'), 'null')
          IN ('integer', 'real', 'null');

INSERT INTO result_repeat_costs (result_id, repeat, wall_s, steps_s, steps, warmup_s,
                                 warmup_steps)
    SELECT r.id, j.key,
           json_extract(j.value, '$.wall_s'),
           json_extract(j.value, '$.steps_s'),
           json_extract(j.value, '$.steps'),
           json_extract(j.value, '$.warmup_s'),
           json_extract(j.value, '$.warmup_steps')
    FROM results r, json_each(r.summary_json, '$.cost') j
    WHERE r.summary_json LIKE '%"cost"%' AND json_valid(r.summary_json)
      AND json_type(r.summary_json, '$.cost') = 'array'
      AND NOT EXISTS (
          SELECT 1 FROM json_each(r.summary_json, '$.cost') k
          WHERE coalesce(json_type(k.value, '$.wall_s'), '') NOT IN ('integer', 'real')
             OR coalesce(json_type(k.value, '$.steps_s'), '') NOT IN ('integer', 'real')
             OR coalesce(json_type(k.value, '$.steps'), '') <> 'integer'
             OR json_extract(k.value, '$.steps') < 0
             OR coalesce(json_type(k.value, '$.warmup_s'), '') NOT IN ('integer', 'real')
             OR coalesce(json_type(k.value, '$.warmup_steps'), '') <> 'integer'
             OR json_extract(k.value, '$.warmup_steps') < 0);
