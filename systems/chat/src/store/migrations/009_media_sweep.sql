-- The orphan sweep (workers/media-sweeper.ts) deletes a media row no message carries, then its
-- object. "No message carries it" must hold against a send racing the sweep, so the reference
-- is a foreign key: a message's insert locks its media row (FOR KEY SHARE) and the sweep skips
-- locked rows, and a send whose media row was deleted first fails its insert (the API answers
-- CHAT_MEDIA_NOT_FOUND) — a message can never carry an object the sweep removed. A delete
-- empties `media`, so the generated id goes NULL and releases the row with it.
ALTER TABLE messages ADD COLUMN media_id bigint GENERATED ALWAYS AS ((media ->> 'id')::bigint) STORED;
ALTER TABLE messages ADD CONSTRAINT messages_media_fk FOREIGN KEY (media_id) REFERENCES media (id);
DROP INDEX messages_by_media;
CREATE INDEX messages_by_media_id ON messages (media_id) WHERE media_id IS NOT NULL;

-- The sweep's scan, oldest first.
CREATE INDEX media_by_created ON media (created_at);
