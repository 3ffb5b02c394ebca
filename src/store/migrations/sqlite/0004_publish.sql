-- What `utilgate publish` needs from a run, stored with it (see `publish.rs`): the gate in
-- force, the pull request's head commit, the status name. NULL for older runs.
ALTER TABLE runs ADD COLUMN publish_json TEXT;
