-- Texts the trust gate quarantined that have no flagged row of their own
-- to live in: a retro's handoff, playbook, proposal or supersede target, a
-- consolidation's merge or derived line. Handoffs and playbooks are
-- upserted by key, so a flagged row there would replace the one served;
-- kept here instead, they are never served and stay for review. text is
-- what the gate stored: credentials already redacted.
create table quarantine (
    id          integer primary key,
    workspace   text not null,
    -- handoff, playbook, proposal, supersede, merge, principle, ...
    kind        text not null,
    text        text not null,
    reason      text not null,
    session_id  text not null default '',
    job_id      bigint not null default 0,
    recorded_at timestamp not null
);
create index quarantine_workspace on quarantine (workspace, id);
