-- 004_edge_log: where the ingester of the edge's JSON access log has read up to (US-09, US-15).
-- One row per log file, locked (FOR UPDATE) by the round that reads it: the clicks of a chunk
-- and the new position commit in ONE transaction, so each line is counted exactly once —
-- across a crash, a restart and replicas ingesting the same file.
CREATE TABLE edge_log_cursors (
  path      text   PRIMARY KEY,
  -- "dev:ino:hash of its first line": another file at the path (rotated) starts again at 0.
  file_id   text   NOT NULL,
  position  bigint NOT NULL CHECK (position >= 0),
  lines     bigint NOT NULL DEFAULT 0,
  skipped   bigint NOT NULL DEFAULT 0
);
