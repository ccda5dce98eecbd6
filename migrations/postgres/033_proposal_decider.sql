-- Who decided a proposal (issue 15: the panel shows who accepted or
-- rejected it): "admin (panel)", "admin (api)", "admin (cli)" or "agent"
-- (store.DecidedBy*). Proposals decided before this migration say nobody:
-- '' (the panel shows "unknown").
alter table proposals add column decided_by text not null default '';
