-- The store's fixed tables. Per-shard tables (log_NNNN, branch_NNNN) are created by src/sqlite/shards.ts when a
-- version first needs them, from the templates there.

-- One row per committed version; the row is written last in the version's transaction, so its presence is the
-- commit marker. checkpoint = 1 when every branch node of the version's tree is stored (root_* name its root).
CREATE TABLE versions (
  version      INTEGER PRIMARY KEY,
  hash         BLOB    NOT NULL,
  size         INTEGER NOT NULL,
  checkpoint   INTEGER NOT NULL DEFAULT 0,
  root_version INTEGER,
  root_seq     INTEGER,
  ops          INTEGER NOT NULL
);

-- Values by key and version: the latest row with version <= v answers a read at v in one B-tree seek.
-- value NULL = the key was removed at that version.
CREATE TABLE kv (
  key     BLOB    NOT NULL,
  version INTEGER NOT NULL,
  value   BLOB,
  PRIMARY KEY (key, version)
) WITHOUT ROWID;

-- Shards of the node tables: each holds the log and branch rows of versions [first, last].
CREATE TABLE shards (
  id    INTEGER PRIMARY KEY,
  first INTEGER NOT NULL,
  last  INTEGER NOT NULL
);

-- Store-wide settings and facts (first version, pruned-up-to, shard size).
CREATE TABLE meta (
  name  TEXT PRIMARY KEY,
  value
) WITHOUT ROWID;
