-- The baseline as of a time (`Store::baseline_move`: the newest move before it) and where its
-- lineage began (`Store::lineage_start`: the last accept or import) each in one walk of a
-- covering index, that stops at the first move that answers: without them every read of a
-- lineage walked all of the case's moves, one per night on main, reading each row, for every
-- case of a report. The first replaces V2's `(series_id, id)`, which it extends. The same text
-- on both backends.
CREATE INDEX baseline_moves_by_series_time ON baseline_moves (series_id, id, moved_at_ns);
CREATE INDEX baseline_moves_by_series_kind ON baseline_moves (series_id, kind, id, moved_at_ns);
DROP INDEX baseline_moves_by_series;
