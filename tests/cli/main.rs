//! End-to-end tests: the real binary, real child processes, real SQLite files.
