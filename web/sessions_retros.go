package web

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/store"
)

// retroRow is a retro applied to a session: what its counts say, and the
// rows behind each of them.
type retroRow struct {
	store.RetroRun
	// Kind is its job's kind (retro_session or retro_error) as its LLM
	// call recorded it; "" when no call is kept.
	Kind      string
	Counts    retrosession.Counts
	CountsErr string
	// Also says what else it did (handoff, playbooks, proposal…), and
	// Flags what asks for a look (quarantined, truncated); a note with an
	// Href links to its rows.
	Also, Flags []retroNote
	// Added and Superseded are the memories it added and invalidated: by
	// the ids it recorded (Counts.Rows), or for an older retro the
	// memories of its job and those they replaced, which may differ from
	// its counts (the page says so).
	Added, Superseded []store.Memory
	// Bumped and Promoted are the memories Counts.BumpedIDs and
	// Counts.PromotedIDs name, in their order (one no longer stored has
	// only its ID); Quarantined the added memories the gate flagged.
	Bumped, Promoted, Quarantined []store.Memory
	// Dropped are the ids its answer named that were not applied, by
	// reason (Counts.DroppedIDs' order).
	Dropped []droppedGroup
}

// droppedGroup is one reason's dropped ids: how many the retro counted and
// the rows it recorded.
type droppedGroup struct {
	Reason string
	Count  int
	Rows   []retro.DroppedRow
}

// retroNote is one thing a retro did, and where its rows are ("" none).
type retroNote struct{ Text, Href string }

// retroMemoriesShown bounds the memories listed per retro from before it
// recorded its ids.
const retroMemoriesShown = 50

func (p *Panel) retroRows(r *http.Request, sessionID string) ([]retroRow, error) {
	st := p.deps.Store
	runs, err := st.SessionRetroRuns(r.Context(), sessionID, 100)
	if err != nil {
		return nil, err
	}
	out := make([]retroRow, len(runs))
	for i, run := range runs {
		row := retroRow{RetroRun: run}
		if err := json.Unmarshal([]byte(run.Counts), &row.Counts); err != nil {
			row.CountsErr = "its counts are not readable: " + err.Error()
		}
		row.Also, row.Flags = retroNotes(run.JobID, row.Counts)
		for _, why := range slices.Sorted(maps.Keys(row.Counts.DroppedIDs)) {
			g := droppedGroup{Reason: why, Count: row.Counts.DroppedIDs[why]}
			for _, d := range row.Counts.DroppedItems {
				if d.Reason == why {
					g.Rows = append(g.Rows, d)
				}
			}
			row.Dropped = append(row.Dropped, g)
		}
		if err := row.readMemories(r, st); err != nil {
			return nil, err
		}
		out[i] = row
	}
	return out, nil
}

// readMemories fills the memories behind the retro's numbers.
func (row *retroRow) readMemories(r *http.Request, st *store.Store) error {
	c := row.Counts
	var err error
	for _, l := range []struct {
		ids []int64
		to  *[]store.Memory
	}{{c.BumpedIDs, &row.Bumped}, {c.PromotedIDs, &row.Promoted}, {c.AddedIDs, &row.Added}, {c.InvalidatedIDs, &row.Superseded}} {
		if *l.to, err = memoriesInOrder(r, st, l.ids); err != nil {
			return err
		}
	}
	if !c.Rows {
		mems, err := st.MemoriesOfJobs(r.Context(), []int64{row.JobID}, retroMemoriesShown)
		if err != nil {
			return err
		}
		for _, m := range mems {
			if m.JobID == row.JobID {
				row.Added = append(row.Added, m)
			} else {
				row.Superseded = append(row.Superseded, m)
			}
		}
	}
	for _, m := range row.Added {
		if m.Quarantined {
			row.Quarantined = append(row.Quarantined, m)
		}
	}
	return nil
}

// memoriesInOrder reads memories by id, in the order of ids; an id no
// longer stored is listed by its id alone.
func memoriesInOrder(r *http.Request, st *store.Store, ids []int64) ([]store.Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	mems, err := st.MemoriesByID(r.Context(), st.DB, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]store.Memory, len(mems))
	for _, m := range mems {
		byID[m.ID] = m
	}
	out := make([]store.Memory, len(ids))
	for i, id := range ids {
		m, ok := byID[id]
		if !ok {
			m = store.Memory{ID: id}
		}
		out[i] = m
	}
	return out, nil
}

// retroNotes says what a retro of job did besides its memories, and what
// of it asks for a look; a count with rows links to them.
func retroNotes(job int64, c retrosession.Counts) (also, flags []retroNote) {
	add := func(to *[]retroNote, ok bool, anchor, format string, args ...any) {
		if ok {
			n := retroNote{Text: fmt.Sprintf(format, args...)}
			if anchor != "" {
				n.Href = fmt.Sprintf("#retro-%d-%s", job, anchor)
			}
			*to = append(*to, n)
		}
	}
	add(&also, c.Handoff, "", "left a handoff")
	add(&also, c.HandoffStale, "", "handoff not stored (a newer session's stands)")
	add(&also, c.Playbooks > 0, "playbooks", "%d playbooks", c.Playbooks)
	add(&also, c.Proposal, "", "a proposal")
	add(&also, c.ProposalRefused, "", "proposal dropped (the user rejected it before)")
	add(&also, c.Promoted > 0, "promoted", "%d promoted to the global library", c.Promoted)
	// Redactions happen inside the texts stored: no rows of their own.
	add(&also, c.Redacted > 0, "", "%d credentials redacted", c.Redacted)
	add(&flags, c.Quarantined > 0, "quarantined", "%d quarantined by the trust gate", c.Quarantined)
	add(&flags, c.Truncated, "", "the answer was truncated: only its additive sections applied")
	for _, why := range slices.Sorted(maps.Keys(c.DroppedIDs)) {
		add(&flags, true, "dropped-"+why, "%d ids dropped (%s)", c.DroppedIDs[why], why)
	}
	return also, flags
}
