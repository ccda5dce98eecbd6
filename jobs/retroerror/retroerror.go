// Package retroerror is the retro_error job: an agent error event in a
// primary session schedules a retro centred on the errors (retro.ErrorFocus)
// a few seconds later, so a burst of errors gives one job; retros of one
// session are spaced and capped. The rule is decided in the ingest
// transaction and kept in the error_retros table, so it holds across
// processes. The job's pipeline is retro_session's (retrosession.Run).
package retroerror

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/events"
	"github.com/mullhq/mull/jobs/retrosession"
	"github.com/mullhq/mull/learn/memory"
	"github.com/mullhq/mull/learn/retro"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/store"
)

// Args are a retro_error job's arguments.
type Args struct {
	SessionID string `json:"session_id"`
}

// Kind is stable: it is stored with every job.
func (Args) Kind() string { return "retro_error" }

// InsertOpts make the job unique per session while it waits or runs: the
// errors of a burst join the job already scheduled. River requires running
// among the unique states; once the job finished, the next error may
// schedule another.
func (Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
		rivertype.JobStateRunning, rivertype.JobStateScheduled,
	}}}
}

// Spec: as retro_session's, the llm queue; 5 attempts 30 minutes apart
// (config [jobs.retro_error] overrides), then the dead letters.
var Spec = engine.Spec{Queue: "llm", LLM: true, MaxAttempts: 5, Backoff: 30 * time.Minute, Timeout: 10 * time.Minute}

// Rules space a session's error retros.
type Rules struct {
	// Debounce is how long after an error its retro runs: the errors that
	// follow within it join the same job.
	Debounce time.Duration
	// MinGap is the least time between two retros of one session.
	MinGap time.Duration
	// MaxPerSession caps the retros of one session.
	MaxPerSession int
}

// DefaultRules are the seed's: 6 s debounce, 60 s apart, at most 3.
var DefaultRules = Rules{Debounce: 6 * time.Second, MinGap: 60 * time.Second, MaxPerSession: 3}

// Decide is the rule: given how many retros a session had (count), when the
// latest was due (last; zero for none) and now, when the next runs, or ok
// false when the session had its maximum.
func (r Rules) Decide(count int, last, now time.Time) (at time.Time, ok bool) {
	if count >= r.MaxPerSession {
		return time.Time{}, false
	}
	at = now.Add(r.Debounce)
	if !last.IsZero() {
		if min := last.Add(r.MinGap); min.After(at) {
			at = min
		}
	}
	return at, true
}

// Register adds retro_error and the ingest hooks of both retros: h's
// AgentError schedules error retros, and its SessionEnded the session's
// retro_session (whose worker retrosession's Spec registers), spaced from
// the error retros.
func Register(reg *engine.Registry, w *Worker, h *Hook) {
	engine.Add(reg, Spec, w)
	reg.OnAgentError(h.AgentError)
	reg.OnSessionEnded(h.SessionEnded)
}

// Hook schedules retro_error jobs from ingest (ingest.Hooks.AgentError).
type Hook struct {
	Store  *store.Store
	Logger *slog.Logger
	// Rules default to DefaultRules when zero.
	Rules Rules
	// Workspaces, when set, are the per-workspace settings: Now queues no
	// retro of a workspace whose retros are off.
	Workspaces retrosession.Workspaces
}

// AgentError is the ingest.Hooks.AgentError: inside the ingest transaction,
// an error event of a primary session schedules a retro_error job unless
// the session had its maximum or one is already waiting (the error joins
// it). Scheduling, the session's error_retros row and the scheduling's
// row in its log (store.LogErrorRetro) commit together.
func (h *Hook) AgentError(ctx context.Context, tx *sql.Tx, client *engine.Client, e events.Event) error {
	primary, ok, err := h.Store.SessionPrimary(ctx, tx, e.SessionID)
	if err != nil || !ok || !primary {
		return err
	}
	rules := h.Rules
	if rules == (Rules{}) {
		rules = DefaultRules
	}
	state, _, err := h.Store.GetErrorRetro(ctx, tx, e.SessionID)
	if err != nil {
		return err
	}
	now := h.Store.Now()
	at, ok := rules.Decide(state.Count, state.LastScheduledAt, now)
	if !ok {
		h.logger().Debug("retro_error refused: session had its maximum", "session_id", e.SessionID,
			"event_id", e.ID, "count", state.Count, "max", rules.MaxPerSession)
		return nil
	}
	res, err := client.InsertTx(ctx, tx, Args{SessionID: e.SessionID}, &river.InsertOpts{ScheduledAt: at})
	if err != nil {
		return err
	}
	if res.UniqueSkippedAsDuplicate {
		return nil // a retro of this session is waiting: the error joins it
	}
	if err := h.Store.PutErrorRetro(ctx, tx, store.ErrorRetro{SessionID: e.SessionID, Count: state.Count + 1, LastScheduledAt: at}); err != nil {
		return err
	}
	return h.Store.LogErrorRetro(ctx, tx, store.ErrorRetroSchedule{SessionID: e.SessionID, At: now, JobID: res.Job.ID, Due: at})
}

// SessionEnded is the ingest.Hooks.SessionEnded that enqueues a session's
// retro (retrosession.Enqueue) so that a failing session gets one retro,
// not two: an error retro still waiting and due within Debounce of the end
// is folded into the session retro (deleted: the session retro reads the
// same errors), and the session retro runs no sooner than MinGap after the
// session's last error retro that did run. Its time is recorded as the
// session's latest retro, so an error after it waits MinGap too.
func (h *Hook) SessionEnded(ctx context.Context, tx *sql.Tx, client *engine.Client, s store.Session) error {
	if !s.Primary {
		return nil
	}
	rules := h.rules()
	// Error retros are scheduled on the store's clock when their errors
	// are stored; the end is measured the same way, when it is stored.
	now := h.Store.Now()
	state, ok, err := h.Store.GetErrorRetro(ctx, tx, s.ID)
	if err != nil {
		return err
	}
	at := now
	if ok {
		folded, err := h.fold(ctx, tx, client, s.ID, now.Add(rules.Debounce))
		if err != nil {
			return err
		}
		if err := h.Store.FoldErrorRetros(ctx, tx, s.ID, folded...); err != nil {
			return err
		}
		if len(folded) > 0 {
			h.logger().Info("error retro folded into the session retro", "session_id", s.ID)
			state.Count = max(state.Count-len(folded), 0)
		} else if min := state.LastScheduledAt.Add(rules.MinGap); min.After(at) {
			at = min
		}
	}
	if err := retrosession.Enqueue(ctx, tx, client, s, at); err != nil {
		return err
	}
	state.SessionID, state.LastScheduledAt = s.ID, at
	return h.Store.PutErrorRetro(ctx, tx, state)
}

// fold deletes the session's retro_error job that waits (scheduled or
// available, not yet running) and is due by due; it returns the jobs it
// deleted (none when there was none).
func (h *Hook) fold(ctx context.Context, tx *sql.Tx, client *engine.Client, sessionID string, due time.Time) ([]int64, error) {
	res, err := client.JobListTx(ctx, tx, river.NewJobListParams().Kinds(Args{}.Kind()).
		States(rivertype.JobStateScheduled, rivertype.JobStateAvailable, rivertype.JobStatePending).First(1000))
	if err != nil {
		return nil, err
	}
	var folded []int64
	for _, j := range res.Jobs {
		var a Args
		if json.Unmarshal(j.EncodedArgs, &a) != nil || a.SessionID != sessionID || j.ScheduledAt.After(due) {
			continue
		}
		if _, err := client.JobDeleteTx(ctx, tx, j.ID); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
			return nil, err
		}
		folded = append(folded, j.ID)
	}
	return folded, nil
}

func (h *Hook) rules() Rules {
	if h.Rules == (Rules{}) {
		return DefaultRules
	}
	return h.Rules
}

func (h *Hook) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// Worker works retro_error jobs: retro_session's pipeline with an excerpt
// centred on the errors.
type Worker struct {
	river.WorkerDefaults[Args]
	Store  *store.Store
	LLM    *llm.Client
	Logger *slog.Logger
	// Caps bound the excerpt; zero fields take retro.DefaultCaps.
	Caps retro.Caps
	// Scope and TempDirs are retrosession.Worker's: under scope global a
	// retro writes its memories to the global library, under both it
	// promotes to it.
	Scope      memory.Scope
	Workspaces retrosession.Workspaces
	TempDirs   []string
	// NoPrecedentGate is retrosession.Worker's (reflection.precedent_gate
	// off).
	NoPrecedentGate bool
}

// Work asks the model about the session's errors and applies its answer
// with the job's completion.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	p := &retrosession.Worker{Store: w.Store, LLM: w.LLM, Logger: w.Logger, Caps: w.Caps, Scope: w.Scope, Workspaces: w.Workspaces, TempDirs: w.TempDirs,
		NoPrecedentGate: w.NoPrecedentGate}
	return retrosession.Run(ctx, p, job, job.Args.SessionID, retro.ErrorFocus)
}
