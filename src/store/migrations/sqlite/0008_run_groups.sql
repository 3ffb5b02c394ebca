-- The run group of a sharded run (`run --shard K/N --run-group ID`): the shards of one grid
-- share a group id, and `report --group ID` merges them. Written in the run's transaction.
-- Append-only.
CREATE TABLE run_groups (
    run_id   INTEGER PRIMARY KEY REFERENCES runs (id),
    group_id TEXT NOT NULL,
    shard    INTEGER,
    shards   INTEGER,
    CHECK ((shard IS NULL) = (shards IS NULL)),
    CHECK (shard IS NULL OR (shard >= 1 AND shard <= shards))
) STRICT;
CREATE INDEX run_groups_by_group ON run_groups (group_id, run_id);
CREATE TRIGGER run_groups_append_only_update BEFORE UPDATE ON run_groups
    BEGIN SELECT RAISE(ABORT, 'run groups are append-only'); END;
CREATE TRIGGER run_groups_append_only_delete BEFORE DELETE ON run_groups
    BEGIN SELECT RAISE(ABORT, 'run groups are append-only'); END;
