-- Achievable peaks measured by `utilgate probe`, per GPU SKU (see `probes.rs`). Append-only
-- like the rest of the history; the latest row of each kind is the current figure.
CREATE TABLE probes (
    id             INTEGER PRIMARY KEY,
    gpu_sku        TEXT NOT NULL,
    measured_at_ns INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    value          REAL NOT NULL,
    json           TEXT
) STRICT;
CREATE INDEX probes_by_sku_kind ON probes (gpu_sku, kind, measured_at_ns, id);
CREATE TRIGGER probes_append_only_update BEFORE UPDATE ON probes
    BEGIN SELECT RAISE(ABORT, 'probes are append-only'); END;
