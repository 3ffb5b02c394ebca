-- A budgeted night's records as tables of their own (sqlite/0012_budget_records.sql says why and
-- what each holds). The rows of older runs are read out of their JSON here, which stays as it was;
-- a record the old readers could not read (a field missing, not a number, a count not a whole
-- number) is left out, as they left it out.
CREATE TABLE run_budgets (
    run_id                  BIGINT PRIMARY KEY REFERENCES runs (id),
    budget_s                DOUBLE PRECISION NOT NULL,
    grace_s                 DOUBLE PRECISION NOT NULL,
    planned_s               DOUBLE PRECISION NOT NULL,
    reserve_s               DOUBLE PRECISION NOT NULL,
    budget_to_resolve_all_s DOUBLE PRECISION,
    used_s                  DOUBLE PRECISION NOT NULL,
    stopped                 BIGINT NOT NULL CHECK (stopped IN (0, 1))
);

CREATE TABLE run_budget_unstarted (
    run_id   BIGINT NOT NULL REFERENCES run_budgets (run_id),
    ordinal  BIGINT NOT NULL,
    case_key TEXT NOT NULL,
    PRIMARY KEY (run_id, ordinal)
);

CREATE TABLE result_budgets (
    result_id       BIGINT PRIMARY KEY REFERENCES results (id),
    note            TEXT NOT NULL CHECK (note IN ('resolved', 'no_history', 'over_budget',
                                                  'too_noisy')),
    planned_repeats BIGINT NOT NULL,
    steps           BIGINT NOT NULL,
    first_repeats   BIGINT NOT NULL,
    confirm_repeats BIGINT NOT NULL,
    time_s          DOUBLE PRECISION NOT NULL,
    stop            TEXT NOT NULL CHECK (stop IN ('decisive', 'suspect', 'planned', 'budget',
                                                  'error', 'not_started')),
    needed_repeats  BIGINT,
    needed_s        DOUBLE PRECISION
);

CREATE TABLE result_repeat_costs (
    result_id    BIGINT NOT NULL REFERENCES results (id),
    repeat       BIGINT NOT NULL,
    wall_s       DOUBLE PRECISION NOT NULL,
    steps_s      DOUBLE PRECISION NOT NULL,
    steps        BIGINT NOT NULL,
    warmup_s     DOUBLE PRECISION NOT NULL,
    warmup_steps BIGINT NOT NULL,
    PRIMARY KEY (result_id, repeat)
);

CREATE TRIGGER run_budgets_append_only_update BEFORE UPDATE ON run_budgets FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('run budgets are append-only');
CREATE TRIGGER run_budgets_append_only_delete BEFORE DELETE ON run_budgets FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('run budgets are append-only');
CREATE TRIGGER run_budget_unstarted_append_only_update BEFORE UPDATE ON run_budget_unstarted FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('run budgets are append-only');
CREATE TRIGGER run_budget_unstarted_append_only_delete BEFORE DELETE ON run_budget_unstarted FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('run budgets are append-only');
CREATE TRIGGER result_budgets_append_only_update BEFORE UPDATE ON result_budgets FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
CREATE TRIGGER result_budgets_append_only_delete BEFORE DELETE ON result_budgets FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
CREATE TRIGGER result_repeat_costs_append_only_update BEFORE UPDATE ON result_repeat_costs FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');
CREATE TRIGGER result_repeat_costs_append_only_delete BEFORE DELETE ON result_repeat_costs FOR EACH ROW EXECUTE FUNCTION utilgate_append_only('results are append-only');

-- The records of older runs, out of their JSON (written by utilgate's serde, so valid JSON).
INSERT INTO run_budgets (run_id, budget_s, grace_s, planned_s, reserve_s,
                         budget_to_resolve_all_s, used_s, stopped)
    SELECT id,
           (n ->> 'budget_s')::double precision,
           (n ->> 'grace_s')::double precision,
           (n ->> 'planned_s')::double precision,
           (n ->> 'reserve_s')::double precision,
           (n ->> 'budget_to_resolve_all_s')::double precision,
           (n ->> 'used_s')::double precision,
           CASE WHEN (n -> 'stopped')::boolean THEN 1 ELSE 0 END
    FROM (SELECT id, config_json::jsonb -> 'budget_night' AS n
          FROM runs WHERE config_json LIKE '%"budget_night"%') r
    WHERE jsonb_typeof(n -> 'budget_s') = 'number'
      AND jsonb_typeof(n -> 'grace_s') = 'number'
      AND jsonb_typeof(n -> 'planned_s') = 'number'
      AND jsonb_typeof(n -> 'reserve_s') = 'number'
      AND coalesce(jsonb_typeof(n -> 'budget_to_resolve_all_s'), 'null') IN ('number', 'null')
      AND jsonb_typeof(n -> 'used_s') = 'number'
      AND jsonb_typeof(n -> 'stopped') = 'boolean'
      AND jsonb_typeof(n -> 'not_started') = 'array';

INSERT INTO run_budget_unstarted (run_id, ordinal, case_key)
    SELECT b.run_id, j.ordinal - 1, j.case_key
    FROM run_budgets b
    JOIN runs r ON r.id = b.run_id,
         jsonb_array_elements_text(r.config_json::jsonb -> 'budget_night' -> 'not_started')
             WITH ORDINALITY AS j (case_key, ordinal);

INSERT INTO result_budgets (result_id, note, planned_repeats, steps, first_repeats,
                            confirm_repeats, time_s, stop, needed_repeats, needed_s)
    SELECT id,
           c ->> 'note',
           (c ->> 'planned_repeats')::bigint,
           (c ->> 'steps')::bigint,
           (c ->> 'first_repeats')::bigint,
           (c ->> 'confirm_repeats')::bigint,
           (c ->> 'time_s')::double precision,
           c ->> 'stop',
           (c ->> 'needed_repeats')::bigint,
           (c ->> 'needed_s')::double precision
    FROM (SELECT id, summary_json::jsonb -> 'budget' AS c
          FROM results WHERE summary_json LIKE '%"budget"%') r
    WHERE c ->> 'note' IN ('resolved', 'no_history', 'over_budget', 'too_noisy')
      AND c ->> 'planned_repeats' ~ '^[0-9]{1,18}$'
      AND c ->> 'steps' ~ '^[0-9]{1,18}$'
      AND c ->> 'first_repeats' ~ '^[0-9]{1,18}$'
      AND c ->> 'confirm_repeats' ~ '^[0-9]{1,18}$'
      AND jsonb_typeof(c -> 'time_s') = 'number'
      AND c ->> 'stop' IN ('decisive', 'suspect', 'planned', 'budget', 'error', 'not_started')
      AND coalesce(c ->> 'needed_repeats', '0') ~ '^[0-9]{1,18}$'
      AND coalesce(jsonb_typeof(c -> 'needed_s'), 'null') IN ('number', 'null');

INSERT INTO result_repeat_costs (result_id, repeat, wall_s, steps_s, steps, warmup_s,
                                 warmup_steps)
    SELECT r.id, j.repeat - 1,
           (j.cost ->> 'wall_s')::double precision,
           (j.cost ->> 'steps_s')::double precision,
           (j.cost ->> 'steps')::bigint,
           (j.cost ->> 'warmup_s')::double precision,
           (j.cost ->> 'warmup_steps')::bigint
    FROM (SELECT id, summary_json::jsonb -> 'cost' AS costs
          FROM results WHERE summary_json LIKE '%"cost"%') r,
         jsonb_array_elements(CASE WHEN jsonb_typeof(r.costs) = 'array' THEN r.costs
                                   ELSE '[]'::jsonb END) WITH ORDINALITY AS j (cost, repeat)
    WHERE NOT EXISTS (
          SELECT 1
          FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.costs) = 'array' THEN r.costs
                                         ELSE '[]'::jsonb END) k (cost)
          WHERE coalesce(jsonb_typeof(k.cost -> 'wall_s'), '') <> 'number'
             OR coalesce(jsonb_typeof(k.cost -> 'steps_s'), '') <> 'number'
             OR coalesce(k.cost ->> 'steps', '') !~ '^[0-9]{1,18}$'
             OR coalesce(jsonb_typeof(k.cost -> 'warmup_s'), '') <> 'number'
             OR coalesce(k.cost ->> 'warmup_steps', '') !~ '^[0-9]{1,18}$');
