-- Layout 2: one row per key changed per version, in a rowid heap appended in commit order, found through a small
-- (key, version) index; the order of a version's operations as one packed row; branch rows as before. A layout-1
-- store's rows are converted by src/sqlite/layout1-upgrade.ts in this migration's transaction, after this SQL.

-- A key set (hash and value) or removed (both NULL) at a version. The row is the leaf of the version's tree: its node
-- key is (version, 2^31 + id). A row of an old tree whose value no kept version reads may keep only its hash.
CREATE TABLE leaves (
  id      INTEGER PRIMARY KEY,
  version INTEGER NOT NULL,
  key     BLOB    NOT NULL,
  hash    BLOB,
  value   BLOB
);

-- Reads of any version: the newest row of the key at or before it, in one seek.
CREATE UNIQUE INDEX leaves_by_key ON leaves (key, version);

-- Every set and remove of a version in order (exact replay needs the order when a key is touched twice), packed by
-- src/sqlite/version-ops.ts; the version's leaves rows have ids first_leaf, first_leaf + 1, … in the order of the
-- operations that made them. Kept only for versions after the checkpoint replays start from.
CREATE TABLE version_ops (
  version    INTEGER PRIMARY KEY,
  first_leaf INTEGER NOT NULL,
  ops        BLOB    NOT NULL
);
