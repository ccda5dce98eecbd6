-- Full-text search over memories (issue 16): a search finds a word in the
-- middle of a memory, in Chinese too, and ranks by relevance, where LIKE
-- over every row could do neither. pg_trgm (contrib; a trusted extension,
-- so the database owner may create it) indexes text_norm
-- (learn/memory.Normalize(text), what a search's terms are normalized
-- like) by its 3-character substrings: a GIN index then answers
-- "text_norm like '%term%'" for a term of 3 or more characters anywhere
-- inside a word, and needs no word breaks (Chinese has none), and
-- similarity() ranks. A tsvector, even under the 'simple' configuration,
-- would split on spaces only: a Chinese sentence would be one token, and a
-- word inside another never found.
--
-- Only live memories are indexed (the store's live condition, word for
-- word, so the planner proves a search's filter implies it): an
-- invalidated or quarantined memory leaves the index as it leaves search.
-- Postgres keeps the index in step with the table, and builds it over the
-- memories stored before this migration.
create extension if not exists pg_trgm;

create index memories_text_trgm on memories using gin (text_norm gin_trgm_ops)
    where state = 'active' and invalid_at is null and not quarantined;
