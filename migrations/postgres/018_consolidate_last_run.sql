-- The workflow run a workspace's last consolidation note is about: the run
-- the last planner started, or the run the derive step last finished; ''
-- when the last planner skipped. 'mull consolidate run' follows it, and
-- used to parse it out of the human-readable last_note. Backfilled from the
-- notes that name a run ("started run wf_…: …", "finished run wf_…: …").
alter table consolidate_state add column last_run_id text not null default '';
update consolidate_state set last_run_id = split_part(substr(last_note, 13), ':', 1)
    where last_note like 'started run %:%';
update consolidate_state set last_run_id = split_part(substr(last_note, 14), ':', 1)
    where last_note like 'finished run %:%';
