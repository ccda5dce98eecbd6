-- Live mull worker processes, by River client id. A process that stops
-- heartbeating is dead, and its running jobs are rescued at once instead of
-- after the rescuer's horizon.
create table mull_workers (
    client_id    text primary key,
    host         text not null,
    pid          integer not null,
    started_at   timestamp not null,
    heartbeat_at timestamp not null
);
