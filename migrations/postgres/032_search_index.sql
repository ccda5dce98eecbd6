-- Memory search at 10,000 memories (issue 16): p99 under 10 ms.
--
-- The trigram index takes inserts straight into its tree, not into GIN's
-- pending list. With the list (fastupdate, the default) every insert went
-- to an unsorted list of up to gin_pending_list_limit (4 MB) that every
-- search read through whole until a vacuum merged it: after a bulk write
-- of 10,000 memories a search read 465 pages of it, and the planner, which
-- counts them, chose a scan of the table over the index. Memories are
-- written one at a time by agents and jobs, so a slower insert costs
-- little. The entries already pending are merged now.
--
-- (SQLite's 032 adds an index for terms too short for the trigram index;
-- here the planner walks the primary key backwards for them, stopping at
-- the search's limit, and would not use one.)
alter index memories_text_trgm set (fastupdate = off);
select gin_clean_pending_list('memories_text_trgm'::regclass);
