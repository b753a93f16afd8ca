-- Layout 2: one row per key changed per version, in a rowid heap appended in commit order, found through a small
-- (key, version) index; the order of a version's operations as one packed row; branch rows as before. A layout-1
-- store's rows are converted by src/sqlite/migrations/002-layout2.ts in this migration's transaction, after this SQL.

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

-- Where a version's leaves rows are: ids first_leaf … first_leaf + leaf_rows − 1, in key order (NULL for a version
-- whose rows are not known to be so: an imported one).
ALTER TABLE versions ADD COLUMN first_leaf INTEGER;
ALTER TABLE versions ADD COLUMN leaf_rows INTEGER;

-- Every set and remove of a version in order (exact replay needs the order when a key is touched twice), packed by
-- src/sqlite/version-ops.ts, each operation that made a leaves row naming the row by its place after first_leaf.
-- Kept only for versions after the checkpoint replays start from.
CREATE TABLE version_ops (
  version    INTEGER PRIMARY KEY,
  first_leaf INTEGER NOT NULL,
  ops        BLOB    NOT NULL
);
