-- 006_edge_log_rotated: the file the cursor read before the edge's log was rotated, and where in
-- it (US-09): lines the edge wrote to it after the ingester's last round — and a worker that
-- still writes to it until it reopens its log — are read from `path.1`, not lost.
ALTER TABLE edge_log_cursors
  ADD COLUMN rotated_file_id  text   NOT NULL DEFAULT '',
  ADD COLUMN rotated_position bigint NOT NULL DEFAULT 0 CHECK (rotated_position >= 0);
