-- Media by reference (CH-24): images and video go to object storage through a pre-signed URL
-- and the message carries only the reference. One row per upload the API authorized: who
-- uploads, what (content type, exact size), until when its upload URL is valid. `sha256` and
-- `stored_at` are set when the object is first found in the store at its declared size (the
-- object is immutable from then on: a second upload of other bytes is refused).
CREATE TABLE media (
  id bigint PRIMARY KEY,
  owner_id text NOT NULL,
  content_type text NOT NULL,
  bytes bigint NOT NULL CHECK (bytes > 0),
  sha256 text CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL,
  upload_expires_at timestamptz NOT NULL,
  stored_at timestamptz,
  CHECK ((sha256 IS NULL) = (stored_at IS NULL))
);

-- A user's uploads still pending (bounded per user: media-store.ts).
CREATE INDEX media_pending_by_owner ON media (owner_id, upload_expires_at) WHERE stored_at IS NULL;

-- The reference a message carries: {id, contentType, bytes, sha256} — immutable, so copied into
-- the row and read with it. A delete empties it with the body. The index serves the download
-- check: may this viewer see media X, i.e. is X in a message of a conversation they are in.
ALTER TABLE messages ADD COLUMN media jsonb;
CREATE INDEX messages_by_media ON messages ((media ->> 'id')) WHERE media IS NOT NULL;
