-- Leaves rows reuse the ids pruning frees (src/sqlite/leaf-ids.ts): a rowid table places a row by its id, so a new row
-- given a freed id fills the hole the deleted one left in its page, where an appended one grows the file. Every
-- deleted row's id goes to `free_leaves` (deleted rows are no kept tree's: pruning deletes what no kept version reads,
-- a rollback what only removed versions read); a commit takes free ids where they lie densely
-- (src/store/write/leaf-slots.ts), and removes them here in its own transaction.
CREATE TABLE free_leaves (id INTEGER PRIMARY KEY);
CREATE TRIGGER leaves_freed AFTER DELETE ON leaves BEGIN INSERT INTO free_leaves (id) VALUES (old.id); END;
-- A version whose rows are not one run of ids lists them (NULL: first_leaf … first_leaf + rows − 1, as before).
ALTER TABLE versions ADD COLUMN leaf_ids BLOB;
ALTER TABLE version_ops ADD COLUMN leaf_ids BLOB;
-- The holes older prunes and rollbacks left: every id below the largest that no row holds (ids were only ever
-- appended, and a row once deleted is named by no kept tree).
WITH RECURSIVE
  gaps (a, b) AS (SELECT prev + 1, id - 1 FROM (SELECT id, lag(id, 1, 0) OVER (ORDER BY id) AS prev FROM leaves) WHERE id > prev + 1),
  ids (x, b) AS (SELECT a, b FROM gaps UNION ALL SELECT x + 1, b FROM ids WHERE x < b)
INSERT INTO free_leaves (id) SELECT x FROM ids;
