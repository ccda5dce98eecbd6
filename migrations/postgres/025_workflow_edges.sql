-- Workflow fan-out that scales (issue 14): a step's completion reads and
-- unblocks only its dependents instead of locking its run and reloading
-- every step of it, so a step costs the same in a 10-wide fan-out as in a
-- 1000-wide one.
--
-- workflow_edges lists each dependency once, keyed by the step depended on
-- (dep), so a finishing step finds its dependents by its primary key.
create table workflow_edges (
    run_id text not null references workflow_runs (id),
    dep    text not null,
    step   text not null,
    primary key (run_id, dep, step)
);

-- waiting: how many of the step's dependencies have not succeeded yet. A
-- dependency's success takes one off in its completion transaction; the one
-- that takes it to 0 enqueues the step.
alter table workflow_steps add column waiting integer not null default 0;

-- open_leaves: how many of the run's leaves (steps nothing depends on) have
-- not succeeded yet. Every step is a leaf or comes before one, so the run
-- has succeeded when this reaches 0; only leaves touch the run's row.
alter table workflow_runs add column open_leaves integer not null default 0;

insert into workflow_edges (run_id, dep, step)
    select s.run_id, d.value, s.name from workflow_steps s, jsonb_array_elements_text(s.deps::jsonb) as d(value);

update workflow_steps set waiting = (
    select count(*) from workflow_edges e
    join workflow_steps d on d.run_id = e.run_id and d.name = e.dep
    where e.run_id = workflow_steps.run_id and e.step = workflow_steps.name and d.status <> 'succeeded');

update workflow_runs set open_leaves = (
    select count(*) from workflow_steps s
    where s.run_id = workflow_runs.id and s.status <> 'succeeded'
      and not exists (select 1 from workflow_edges e where e.run_id = s.run_id and e.dep = s.name));
