-- A run's unique id (`runs.uid`), drawn when the run starts and kept by its journal and its
-- rescue file, so that a replay of the same run (`import run` of one rescue file twice, `run
-- --resume` after its rescue was imported) is refused, never stored twice. NULL for runs
-- stored before it and for runs that are not replays of anything (imported results files).
ALTER TABLE runs ADD COLUMN uid TEXT;
CREATE UNIQUE INDEX runs_by_uid ON runs (uid);
