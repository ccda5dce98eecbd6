-- Workflow fan-out that scales (issue 14): a step's completion reads and
-- unblocks only its dependents instead of locking its run and reloading
-- every step of it, so a step costs the same in a 10-wide fan-out as in a
-- 1000-wide one.
--
-- workflow_edges lists each dependency once, keyed by the step depended on
-- (dep), so a finishing step finds its dependents by its primary key. A
-- step's dependencies are dealt into buckets (about the square root of
-- their number), so the dependencies of a wide fan-in finishing at once
-- queue on many rows, not on one.
create table workflow_edges (
    run_id text not null references workflow_runs (id),
    dep    text not null,
    step   text not null,
    bucket integer not null default 0,
    primary key (run_id, dep, step)
);

-- waiting: how many of the bucket's dependencies have not succeeded yet. A
-- dependency's success takes one off in its completion transaction; the one
-- that takes a bucket to 0 takes one off its step's waiting.
create table workflow_waits (
    run_id  text not null references workflow_runs (id),
    step    text not null,
    bucket  integer not null,
    waiting integer not null,
    primary key (run_id, step, bucket)
);

-- waiting: how many of the step's buckets still wait; the step is enqueued
-- by the success that takes it to 0.
alter table workflow_steps add column waiting integer not null default 0;

-- open_leaves: how many of the run's leaves (steps nothing depends on) have
-- not succeeded yet. Every step is a leaf or comes before one, so the run
-- has succeeded when this reaches 0; only leaves touch the run's row.
alter table workflow_runs add column open_leaves integer not null default 0;

-- Existing runs: one bucket per step.
insert into workflow_edges (run_id, dep, step)
    select s.run_id, d.value, s.name from workflow_steps s, jsonb_array_elements_text(s.deps::jsonb) as d(value);

insert into workflow_waits (run_id, step, bucket, waiting)
    select e.run_id, e.step, 0, sum(case when d.status = 'succeeded' then 0 else 1 end)
    from workflow_edges e join workflow_steps d on d.run_id = e.run_id and d.name = e.dep
    group by e.run_id, e.step;

update workflow_steps set waiting = (
    select count(*) from workflow_waits w
    where w.run_id = workflow_steps.run_id and w.step = workflow_steps.name and w.waiting > 0);

update workflow_runs set open_leaves = (
    select count(*) from workflow_steps s
    where s.run_id = workflow_runs.id and s.status <> 'succeeded'
      and not exists (select 1 from workflow_edges e where e.run_id = s.run_id and e.dep = s.name));
