-- Full-text search over memories (issue 16): a search finds a word in the
-- middle of a memory, in Chinese too, and ranks by relevance (bm25), where
-- LIKE over every row could do neither. An external-content FTS5 table over
-- text_norm (learn/memory.Normalize(text), what a search's terms are
-- normalized like) with the trigram tokenizer: every 3-character substring
-- is a token, so a term matches anywhere inside a word and needs no word
-- breaks (Chinese has none). Terms under 3 characters match no trigram; the
-- store looks for them with instr() instead.
--
-- Every memory is indexed, live or not: the search joins memories and keeps
-- the live ones there, so an invalidation needs no index change. The
-- triggers keep the index in step with the table; text_norm is never
-- updated today, but a future edit would still be followed.
create virtual table memories_fts using fts5(
    text_norm,
    content = 'memories',
    content_rowid = 'id',
    tokenize = 'trigram'
);

create trigger memories_fts_insert after insert on memories begin
    insert into memories_fts (rowid, text_norm) values (new.id, new.text_norm);
end;

create trigger memories_fts_delete after delete on memories begin
    insert into memories_fts (memories_fts, rowid, text_norm) values ('delete', old.id, old.text_norm);
end;

create trigger memories_fts_update after update of text_norm on memories begin
    insert into memories_fts (memories_fts, rowid, text_norm) values ('delete', old.id, old.text_norm);
    insert into memories_fts (rowid, text_norm) values (new.id, new.text_norm);
end;

-- The memories stored before this migration.
insert into memories_fts (memories_fts) values ('rebuild');
