package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The panel's memory states: a memory's State as a person reads it. Live
// is what may be served (liveCond); quarantined wins over every state (a
// quarantined memory is never served, whatever its lifecycle); the others
// are the stored state.
const (
	PanelLive        = "live"
	PanelQuarantined = "quarantined"
)

// PanelStates are the states the panel filters and counts by, in order.
var PanelStates = []string{PanelLive, StateSuperseded, StateDeprecated, StateDeleted, PanelQuarantined}

// PanelMemoryFilter narrows the panel's memory list. Empty fields match
// everything.
type PanelMemoryFilter struct {
	// Workspace keeps one library when ByWorkspace ("" is the global one).
	Workspace   string
	ByWorkspace bool
	Kind        string
	// Scope is global, workspace, session or reflection: a structured
	// lesson's own scope, and for other kinds their library (global: the
	// global library, workspace: a workspace's).
	Scope string
	// State is one of PanelStates.
	State string
	// Origin is the path that wrote it (tool, command, retro, sleep,
	// panel, import); Src the source its writer claimed.
	Origin, Src string
	// Terms keep memories whose normalized text contains one of them
	// (already normalized, as SearchMemories takes them).
	Terms []string
	// Limit and Offset page the list (newest first).
	Limit, Offset int
}

// where is f's condition (kind and state left out when noKindState, for
// the counts that break down by them) and its arguments.
func (f PanelMemoryFilter) where(noKindState bool) (string, []any, error) {
	conds := []string{"1 = 1"}
	var args []any
	eq := func(col, v string) {
		args = append(args, v)
		conds = append(conds, col+" = $"+strconv.Itoa(len(args)))
	}
	if f.ByWorkspace {
		eq("workspace", f.Workspace)
	}
	if f.Origin != "" {
		eq("origin", f.Origin)
	}
	if f.Src != "" {
		eq("src", f.Src)
	}
	switch f.Scope {
	case "":
	case "global":
		conds = append(conds, "(scope = 'global' or (scope = '' and workspace = ''))")
	case "workspace":
		conds = append(conds, "(scope = 'workspace' or (scope = '' and workspace <> ''))")
	case "session", "reflection":
		eq("scope", f.Scope)
	default:
		return "", nil, fmt.Errorf("scope %q is not one of global, workspace, session, reflection", f.Scope)
	}
	if len(f.Terms) > MaxSearchTerms {
		return "", nil, fmt.Errorf("search: %d terms; at most %d", len(f.Terms), MaxSearchTerms)
	}
	if len(f.Terms) > 0 {
		likes := make([]string, len(f.Terms))
		for i, t := range f.Terms {
			args = append(args, "%"+likeEscaper.Replace(t)+"%")
			likes[i] = "text_norm like $" + strconv.Itoa(len(args)) + ` escape '\'`
		}
		conds = append(conds, "("+strings.Join(likes, " or ")+")")
	}
	if noKindState {
		return strings.Join(conds, " and "), args, nil
	}
	if f.Kind != "" {
		eq("kind", f.Kind)
	}
	switch f.State {
	case "":
	case PanelLive:
		conds = append(conds, liveCond)
	case PanelQuarantined:
		conds = append(conds, "quarantined")
	case StateSuperseded, StateDeprecated, StateDeleted:
		conds = append(conds, "not quarantined")
		eq("state", f.State)
	default:
		return "", nil, fmt.Errorf("state %q is not one of %s", f.State, strings.Join(PanelStates, ", "))
	}
	return strings.Join(conds, " and "), args, nil
}

// PanelMemories lists a page of the memories f selects, newest recorded
// first.
func (s *Store) PanelMemories(ctx context.Context, q querier, f PanelMemoryFilter) ([]Memory, error) {
	where, args, err := f.where(false)
	if err != nil {
		return nil, err
	}
	query, args := pageQuery(`select `+memoryColumns+` from memories where `+where+` order by recorded_at desc, id desc`,
		args, f.Limit, f.Offset)
	return s.queryMemories(ctx, q, query, args...)
}

// MemoryCount is how many memories of one kind are in one panel state.
type MemoryCount struct {
	Kind, State string
	N           int
}

// PanelMemoryCounts counts the memories f selects, by kind and panel
// state, ignoring f's own kind and state (the counts link to them).
func (s *Store) PanelMemoryCounts(ctx context.Context, q querier, f PanelMemoryFilter) ([]MemoryCount, error) {
	where, args, err := f.where(true)
	if err != nil {
		return nil, err
	}
	// Grouped by the raw columns (the panel state is folded in Go): no
	// expression per row, so an index holding them can answer alone.
	rows, err := q.QueryContext(ctx, `select kind, state, quarantined, invalid_at is null, count(*) from memories where `+where+
		` group by kind, state, quarantined, invalid_at is null`, args...)
	if err != nil {
		return nil, fmt.Errorf("count memories: %w", err)
	}
	defer rows.Close()
	sum := map[[2]string]int{}
	var order [][2]string
	for rows.Next() {
		var kind, state string
		var quarantined, valid bool
		var n int
		if err := rows.Scan(&kind, &state, &quarantined, &valid, &n); err != nil {
			return nil, err
		}
		k := [2]string{kind, panelState(state, quarantined, valid)}
		if _, ok := sum[k]; !ok {
			order = append(order, k)
		}
		sum[k] += n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(order, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	out := make([]MemoryCount, len(order))
	for i, k := range order {
		out[i] = MemoryCount{Kind: k[0], State: k[1], N: sum[k]}
	}
	return out, nil
}

// panelState is a memory's PanelStates entry from its state, quarantine
// flag and whether invalid_at is unset.
func panelState(state string, quarantined, valid bool) string {
	switch {
	case quarantined:
		return PanelQuarantined
	case state == StateActive && valid:
		return PanelLive
	case state == StateActive:
		return StateDeleted
	}
	return state
}

// PanelState is a row's PanelStates entry.
func PanelState(m Memory) string { return panelState(m.State, m.Quarantined, m.InvalidAt.IsZero()) }

// LibraryCount is one library ("" the global one) and its memories.
type LibraryCount struct {
	Workspace string
	N         int
}

// MemoryLibraries lists the libraries that hold memories, by name, at most
// limit.
func (s *Store) MemoryLibraries(ctx context.Context, q querier, limit int) ([]LibraryCount, error) {
	rows, err := q.QueryContext(ctx, `select workspace, count(*) from memories group by workspace order by workspace limit $1`,
		max(limit, 1))
	if err != nil {
		return nil, fmt.Errorf("list memory libraries: %w", err)
	}
	defer rows.Close()
	var out []LibraryCount
	for rows.Next() {
		var l LibraryCount
		if err := rows.Scan(&l.Workspace, &l.N); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// MemoryRelated lists the memories that name memory id: those it
// superseded (superseded_by = id) and those promoted or moved from it
// (promoted_from_id = id), by id. The "<> 0" terms (id is never 0) let
// both databases use the partial indexes on the two columns.
func (s *Store) MemoryRelated(ctx context.Context, q querier, id int64) (superseded, promoted []Memory, err error) {
	rows, err := s.queryMemories(ctx, q, `select `+memoryColumns+` from memories
		where (superseded_by = $1 and superseded_by <> 0) or (promoted_from_id = $1 and promoted_from_id <> 0) order by id`, id)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		if r.SupersededBy == id {
			superseded = append(superseded, r)
		}
		if r.PromotedFromID == id {
			promoted = append(promoted, r)
		}
	}
	return superseded, promoted, nil
}

// MemoryReflection is a reflection item that names a memory: the one
// that wrote it (MemoryID) or one that repeated or revised it (TargetID).
type MemoryReflection struct {
	ReflectionID int64
	TaskID       string
	By           string
	JobID        int64
	RecordedAt   time.Time
	Relation     string
	TargetID     int64
	MemoryID     int64
	RefusedCheck string
	Verdict      string
}

// MemoryReflections lists the reflection items that wrote or named memory
// id, oldest first.
func (s *Store) MemoryReflections(ctx context.Context, q querier, id int64) ([]MemoryReflection, error) {
	rows, err := q.QueryContext(ctx, `select r.id, r.task_id, r.reflected_by, r.job_id, r.recorded_at,
		i.relation, i.target_id, i.memory_id, i.refused_check, i.verdict
		from reflection_items i join reflections r on r.id = i.reflection_id
		where i.memory_id = $1 or i.target_id = $1 order by r.recorded_at, r.id, i.idx`, id)
	if err != nil {
		return nil, fmt.Errorf("reflections of memory %d: %w", id, err)
	}
	defer rows.Close()
	var out []MemoryReflection
	for rows.Next() {
		var m MemoryReflection
		if err := rows.Scan(&m.ReflectionID, &m.TaskID, &m.By, &m.JobID, &m.RecordedAt, &m.Relation, &m.TargetID,
			&m.MemoryID, &m.RefusedCheck, &m.Verdict); err != nil {
			return nil, err
		}
		m.RecordedAt = m.RecordedAt.UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// inForceAt keeps the memories believed at the argument numbered n: the
// bi-temporal rule of memory.ValidAt (recorded by then, not invalidated by
// then), never a quarantined one (never served).
func inForceAt(n int) string {
	p := "$" + strconv.Itoa(n)
	return "recorded_at <= " + p + " and (invalid_at is null or invalid_at > " + p + ") and not quarantined"
}

// MemoriesInForce lists a page of the memories of some libraries (nil:
// all) in force at at (inForceAt), newest recorded first.
func (s *Store) MemoriesInForce(ctx context.Context, q querier, workspaces []string, at time.Time, limit, offset int) ([]Memory, error) {
	where, args := memoryWhere(workspaces, false)
	args = append(args, utcMicro(at))
	query, args := pageQuery(`select `+memoryColumns+` from memories where `+where+` and `+inForceAt(len(args))+
		` order by recorded_at desc, id desc`, args, limit, offset)
	return s.queryMemories(ctx, q, query, args...)
}

// MemoriesInForceChanged lists the memories of some libraries (nil: all)
// in force at to but not at from (added), and those in force at from but
// not at to (removed), each newest recorded first and at most limit.
func (s *Store) MemoriesInForceChanged(ctx context.Context, q querier, workspaces []string, from, to time.Time, limit int) (added, removed []Memory, err error) {
	one := func(in, out time.Time) ([]Memory, error) {
		where, args := memoryWhere(workspaces, false)
		args = append(args, utcMicro(in), utcMicro(out), max(limit, 1))
		n := len(args)
		return s.queryMemories(ctx, q, `select `+memoryColumns+` from memories where `+where+` and `+inForceAt(n-2)+
			` and not (`+inForceAt(n-1)+`) order by recorded_at desc, id desc limit $`+strconv.Itoa(n), args...)
	}
	if added, err = one(to, from); err != nil {
		return nil, nil, err
	}
	removed, err = one(from, to)
	return added, removed, err
}

// pageQuery appends a page's limit and offset to query as bound
// arguments after args; a limit of 0 or less leaves the query whole.
func pageQuery(query string, args []any, limit, offset int) (string, []any) {
	if limit <= 0 {
		return query, args
	}
	args = append(args, limit, max(offset, 0))
	return query + ` limit $` + strconv.Itoa(len(args)-1) + ` offset $` + strconv.Itoa(len(args)), args
}

// MaxMemoryIDAt is the largest id of a memory recorded at or before at (0
// when none was): the watermark a digest published at at would take in.
func (s *Store) MaxMemoryIDAt(ctx context.Context, q querier, at time.Time) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `select coalesce(max(id), 0) from memories where recorded_at <= $1`, utcMicro(at)).Scan(&id)
	return id, err
}
