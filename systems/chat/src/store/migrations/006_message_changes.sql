-- Edit and delete are events in the history like any message (the history is the queue): a
-- row of kind 'edit' or 'delete' takes the next seq and names the message it changes
-- (`target_id`), so a device resuming after its last seq sees the change in order. The
-- changed message itself is rewritten in place: an edit replaces its body and stamps
-- `edited_at`; a delete leaves a tombstone (empty body, `deleted_at`) and empties the bodies of
-- its earlier edits, so no version of the text stays readable.
ALTER TABLE messages
  ADD COLUMN kind text NOT NULL DEFAULT 'text' CHECK (kind IN ('text', 'edit', 'delete')),
  ADD COLUMN target_id bigint,
  ADD COLUMN edited_at timestamptz,
  ADD COLUMN deleted_at timestamptz,
  ADD CONSTRAINT messages_change_target CHECK ((kind = 'text') = (target_id IS NULL));

-- The changes of one message (a delete empties its edits; a repeated delete finds the first).
CREATE INDEX messages_by_target ON messages (chat_id, target_id) WHERE target_id IS NOT NULL;
