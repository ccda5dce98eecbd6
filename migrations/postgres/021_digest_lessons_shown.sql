-- The lessons a published digest's text shows (a JSON array of memory ids,
-- ascending): the lessons in force at its watermark less those the lessons
-- quota, MaxLines, the shrink, the drop or the render-time gate left out. A
-- task opened in a session freezes exactly these, the lessons its agent was
-- shown. Null on a row published before this column existed: a task reads
-- every lesson in force at that row's watermark instead, until the next
-- publication writes the ids.
alter table digest_state add column lesson_ids text;
