-- A version per post, bumped by every edit and delete (FD-21): the cached bodies of the warm
-- read (store/post-cache.ts) are ordered by it, so an older body never replaces a newer one.

ALTER TABLE posts ADD COLUMN version int4 NOT NULL DEFAULT 0;
