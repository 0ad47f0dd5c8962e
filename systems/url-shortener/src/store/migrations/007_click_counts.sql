-- 007_click_counts: a row of the click log stands for `click_count` identical clicks (issue 18).
-- The flusher folds clicks of one batch that are equal in every field — link, status, referrer
-- host, user-agent family, visitor, within one UTC second — into one row (src/domain/click-record.ts
-- ClickEncoder); every count is a sum over rows. Rows written before this, and the edge-log
-- ingester's, stand for one click each.
ALTER TABLE clicks ADD COLUMN click_count integer NOT NULL DEFAULT 1 CHECK (click_count >= 1);
