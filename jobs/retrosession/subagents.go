package retrosession

import (
	"context"

	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/store"
)

// Subagent sessions a retro reads, and how many of the last events of
// each: their failures are evidence for the parent (the seed's subagent
// failures); the excerpt caps how many reach the model.
const (
	maxSubagents      = 20
	maxSubagentEvents = 300
)

// evidence is the session's evidence: its own events, and the failures of
// the subagent sessions started from it.
func (w *Worker) evidence(ctx context.Context, sess store.Session, rows []store.Event) (retro.Input, error) {
	in := retro.FromEvents(toEvents(rows))
	children, err := w.Store.SubagentSessions(ctx, sess.ID, sess.Workspace, maxSubagents)
	if err != nil {
		return in, err
	}
	for _, id := range children {
		evs, err := w.Store.SessionEvents(ctx, id, maxSubagentEvents)
		if err != nil {
			return in, err
		}
		in.AddSubagent(id, toEvents(evs))
	}
	return in, nil
}
