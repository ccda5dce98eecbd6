package store

import (
	"context"
	"fmt"
	"strconv"
)

// The panel's reads of the retros' proposals (web/proposals.go): a page of
// them, their counts by status, and the workspaces that have any.

// ProposalPage selects a page of proposals. Zero fields match all.
type ProposalPage struct {
	Workspace string
	// Status is pending, accepted or rejected.
	Status        string
	Limit, Offset int
}

// ProposalsPage lists proposals, pending first, then newest first.
func (s *Store) ProposalsPage(ctx context.Context, f ProposalPage) ([]Proposal, error) {
	where, args := proposalWhere(f.Workspace, f.Status)
	args = append(args, max(f.Limit, 1), max(f.Offset, 0))
	n := len(args)
	out, err := queryAll(ctx, s.DB, scanProposal, `select `+proposalColumns+` from proposals where `+where+`
		order by case when status = 'pending' then 0 else 1 end, created_at desc, id desc
		limit $`+strconv.Itoa(n-1)+` offset $`+strconv.Itoa(n), args...)
	if err != nil {
		return nil, fmt.Errorf("list a page of proposals of %q: %w", f.Workspace, err)
	}
	return out, nil
}

// ProposalStatusCounts counts a workspace's proposals ("" for every
// workspace's) by status.
func (s *Store) ProposalStatusCounts(ctx context.Context, workspace string) (map[string]int, error) {
	where, args := proposalWhere(workspace, "")
	type row struct {
		status string
		n      int
	}
	rows, err := queryAll(ctx, s.DB, func(r scanner) (row, error) {
		var x row
		return x, r.Scan(&x.status, &x.n)
	}, `select status, count(*) from proposals where `+where+` group by status`, args...)
	if err != nil {
		return nil, fmt.Errorf("count proposals of %q: %w", workspace, err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.status] = r.n
	}
	return out, nil
}

// ProposalWorkspaces lists the workspaces that have proposals, by name, at
// most limit.
func (s *Store) ProposalWorkspaces(ctx context.Context, limit int) ([]string, error) {
	out, err := queryAll(ctx, s.DB, func(r scanner) (string, error) {
		var w string
		return w, r.Scan(&w)
	}, `select distinct workspace from proposals order by workspace limit $1`, max(limit, 1))
	if err != nil {
		return nil, fmt.Errorf("list the workspaces with proposals: %w", err)
	}
	return out, nil
}

func proposalWhere(workspace, status string) (string, []any) {
	where, args := "1 = 1", []any{}
	if workspace != "" {
		args = append(args, workspace)
		where += " and workspace = $" + strconv.Itoa(len(args))
	}
	if status != "" {
		args = append(args, status)
		where += " and status = $" + strconv.Itoa(len(args))
	}
	return where, args
}
