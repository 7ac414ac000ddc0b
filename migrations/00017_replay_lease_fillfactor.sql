-- A replay's outcome is an UPDATE of its narrow replay_leases row (00016), meant to be a
-- HOT update: no indexed column changes, so no index entry is written, as long as the new
-- version fits on the row's page. A job inserts its leases a page at a time, which packs
-- them into full pages, so at the default fillfactor (100) nearly every outcome moved its
-- row to another page and wrote a new primary key entry (3 WAL records per record instead
-- of 1). A lease row grows from ~75-100 bytes to ~140-160 with its outcome (more with a
-- long topic name), and the old version stays on the page beside the new one until the
-- page is pruned: pages filled to 30 % leave room for every row of the page to take its
-- outcome in place (40 % did not for the shortest rows). The table holds only the leases
-- of running jobs and the outcomes not yet folded.

-- +goose Up
ALTER TABLE replay_leases SET (fillfactor = 30);

-- +goose Down
ALTER TABLE replay_leases RESET (fillfactor);
