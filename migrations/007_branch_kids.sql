-- Each branch row written from now on records its children's heights, sizes and hashes in `kids`
-- (src/sqlite/branch-kids.ts): a change past the memory budget then rehashes, resizes and balances the spine without
-- reading a sibling's row. The column is added to every branch table by src/sqlite/migrations/007-branch-kids.ts
-- (their names are not known here). Rows written before keep a NULL and are read as they were.
SELECT 1;
