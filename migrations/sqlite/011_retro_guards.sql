-- Guards for retros that run at once or late.
--
-- At most one pending proposal per workspace, held by the database: the
-- retro's insert does nothing when the index refuses it. A race before this
-- migration may have left two pending in one workspace; the oldest stays
-- pending and the later ones are removed, as the guard would have dropped
-- them.
delete from proposals where status = 'pending' and exists (
    select 1 from proposals p where p.workspace = proposals.workspace and p.status = 'pending'
    and (p.created_at < proposals.created_at or (p.created_at = proposals.created_at and p.id < proposals.id)));
create unique index proposals_one_pending on proposals (workspace) where status = 'pending';

-- The time of the last session event the handoff's retro read: a retro
-- over older evidence (one retried late) does not replace a newer
-- session's handoff. NULL (handoffs written before this migration) is
-- replaced by any retro.
alter table handoffs add column source_at timestamp;
