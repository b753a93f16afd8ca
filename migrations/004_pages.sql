-- Layout 3: the bottom of the tree in pages. A page row holds a canonical subtree of a checkpoint's tree (a root of
-- at most 16 leaves whose parent has more), its nodes in post-order (src/sqlite/page-codec.ts), so that a change past
-- the memory budget reads one row instead of one per node of its path and siblings. Pages are written at
-- checkpoints, copy-on-write: a page whose root changed is written anew under a new id, and the old one is recorded
-- in orphaned_branches (as the node key PAGE_BASE + id · 32, src/sqlite/shards.ts) for the prune that no kept tree
-- needs it after. AUTOINCREMENT: an id is never given twice, so a stale record can never name a newer page.
-- The nodes above the pages stay branch rows; stores made before keep their branch rows, which a tree may mix with
-- pages (a clean subtree is stored wherever it was stored first).
CREATE TABLE IF NOT EXISTS pages (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  version INTEGER NOT NULL,
  bytes   BLOB    NOT NULL
);
CREATE INDEX IF NOT EXISTS pages_version ON pages (version);
