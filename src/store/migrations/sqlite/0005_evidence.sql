-- Evidence attached to results (see `evidence.rs`): analyses per result, and raw traces stored
-- once per content address (pruned by retention, so `evidence.sha256` may outlive its blob).
CREATE TABLE evidence_blobs (
    sha256 TEXT PRIMARY KEY,
    bytes  INTEGER NOT NULL,
    data   BLOB NOT NULL
) STRICT;
CREATE TABLE evidence (
    id            INTEGER PRIMARY KEY,
    result_id     INTEGER NOT NULL REFERENCES results (id),
    kind          TEXT NOT NULL,
    name          TEXT NOT NULL,
    sha256        TEXT,
    analysis_json TEXT,
    warning       TEXT
) STRICT;
CREATE INDEX evidence_by_result ON evidence (result_id, id);
