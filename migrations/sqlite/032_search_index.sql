-- Memory search at 10,000 memories (issue 16): p99 under 10 ms.
--
-- A search's words too short for the trigram index (a 2-character Chinese
-- word) are looked for in the libraries' live memories, newest first,
-- until enough are found. This index lists exactly those, in that order,
-- with their normalized text: the search reads no other workspace's
-- memories and no dead ones, stops at the limit instead of sorting every
-- match, and tests the text in the index, reading the table only for the
-- memories that contain the word (about half the time of reading every
-- row). The condition is the store's live condition, word for word, so
-- SQLite proves a search's filter implies it. (Postgres's 032 also takes
-- its trigram index off GIN's pending list; FTS5 has none.)
create index memories_live_workspace on memories (workspace, id, text_norm)
    where state = 'active' and invalid_at is null and not quarantined;
