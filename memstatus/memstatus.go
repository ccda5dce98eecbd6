// Package memstatus is memory_status (the seed's selfip_status): one
// workspace's libraries, the job queue, its budget and the memory errors,
// gathered in a handful of statements for the agent's tool, the /mull
// slash command and `mull memory status`.
package memstatus

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/engine"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/memories"
	"github.com/mullhq/mull/store"
)

// Status is GET /v1/memory/status's answer.
type Status struct {
	Workspace string                   `json:"workspace"`
	Scope     string                   `json:"scope"`
	Libraries []memories.LibraryStatus `json:"libraries"`
	Queue     Queue                    `json:"queue"`
	// Budget is the workspace's key today; nil when budgets are off.
	Budget *Budget `json:"budget"`
	Errors Errors  `json:"errors"`
}

// Queue is River's jobs by state. River keeps a job's workspace inside its
// args (a retro's only by its session), so the counts are every
// workspace's: Of says so.
type Queue struct {
	Of        string `json:"of"`
	Available int64  `json:"available"`
	Scheduled int64  `json:"scheduled"`
	Running   int64  `json:"running"`
	Retryable int64  `json:"retryable"`
	// Dead counts dead letters: discarded jobs, and jobs cancelled with
	// an error ('mull dlq list').
	Dead int64 `json:"dead"`
	// Paused: the llm queue, which every learning job uses, is paused;
	// PausedReason is why mull paused it ("" when an operator did).
	Paused       bool   `json:"paused"`
	PausedReason string `json:"paused_reason"`
	// PausedQueues names every paused queue.
	PausedQueues []string `json:"paused_queues,omitempty"`
}

// Budget is one budget key today.
type Budget struct {
	Key string `json:"key"`
	// LimitKey names the key whose limit applies when it is not Key:
	// workspace:* for a workspace without a limit of its own.
	LimitKey string `json:"limit_key,omitempty"`
	// Limit is the token limit (0: none); Spent the tokens settled;
	// Reserved those held by calls in flight; Remaining what is left, -1
	// without a limit.
	Limit     int64     `json:"limit"`
	Spent     int64     `json:"spent"`
	Reserved  int64     `json:"reserved"`
	Remaining int64     `json:"remaining"`
	LimitUSD  float64   `json:"limit_usd,omitempty"`
	SpentUSD  float64   `json:"spent_usd"`
	ResetAt   time.Time `json:"reset_at"`
}

// Errors count the memory reads and writes of the workspace that failed
// (Counter), in the answering process since Since.
type Errors struct {
	Read  int64 `json:"read"`
	Write int64 `json:"write"`
	// Last is the newest failure's message, LastAt when it happened.
	Last   string     `json:"last"`
	LastAt *time.Time `json:"last_at,omitempty"`
	// Since is when the process started counting; Counted is false where
	// nothing counts (the CLI, which serves no reads).
	Since   *time.Time `json:"since,omitempty"`
	Counted bool       `json:"counted"`
}

// Deps are what a status reads. Budget may be nil (budgets off).
type Deps struct {
	Store    *store.Store
	Memories *memories.Service
	Client   *engine.Client
	Budget   *budget.Ledger
}

// Read gathers workspace's status ("" is the global library alone).
func Read(ctx context.Context, d Deps, workspace string) (Status, error) {
	scope, libs, err := d.Memories.LibraryStatuses(ctx, workspace)
	if err != nil {
		return Status{}, err
	}
	st := Status{Workspace: workspace, Scope: string(scope), Libraries: libs}
	if st.Queue, err = readQueue(ctx, d); err != nil {
		return Status{}, err
	}
	if d.Budget != nil {
		k, reset, err := d.Budget.KeyState(ctx, budgetKey(workspace))
		if err != nil {
			return Status{}, err
		}
		st.Budget = &Budget{Key: k.Key, LimitKey: k.LimitKey, Limit: k.LimitTokens, Spent: k.SpentTokens, Reserved: k.ReservedTokens,
			Remaining: k.RemainingTokens, LimitUSD: k.LimitUSD, SpentUSD: k.CostUSD, ResetAt: reset}
	}
	return st, nil
}

// budgetKey is the budget key a status shows: the workspace's, or the
// global one for the global library alone ("").
func budgetKey(workspace string) string {
	if workspace == "" {
		return budget.KeyGlobal
	}
	return "workspace:" + workspace // budget.Keys' workspace key
}

// llmQueue is the queue of the learning jobs (retros, consolidation,
// reflections): the one whose pause stops learning.
const llmQueue = "llm"

func readQueue(ctx context.Context, d Deps) (Queue, error) {
	counts, err := d.Store.JobCounts(ctx)
	if err != nil {
		return Queue{}, err
	}
	dead, err := d.Store.DeadLetterCounts(ctx)
	if err != nil {
		return Queue{}, err
	}
	queues, err := d.Client.QueueList(ctx, river.NewQueueListParams().First(1000))
	if err != nil {
		return Queue{}, err
	}
	return foldQueue(counts, dead, queues.Queues), nil
}

// foldQueue sums River's job counts by state (pending counts as
// available; completed and cancelled jobs are not waiting for anything),
// the dead letters of every kind, and names the paused queues.
func foldQueue(counts []store.JobCount, dead map[string]int64, queues []*rivertype.Queue) Queue {
	q := Queue{Of: "all workspaces"}
	for _, c := range counts {
		switch rivertype.JobState(c.State) {
		case rivertype.JobStateAvailable, rivertype.JobStatePending:
			q.Available += c.N
		case rivertype.JobStateScheduled:
			q.Scheduled += c.N
		case rivertype.JobStateRunning:
			q.Running += c.N
		case rivertype.JobStateRetryable:
			q.Retryable += c.N
		}
	}
	for _, n := range dead {
		q.Dead += n
	}
	for _, rq := range queues {
		if rq.PausedAt == nil {
			continue
		}
		q.PausedQueues = append(q.PausedQueues, rq.Name)
		if rq.Name == llmQueue {
			q.Paused, q.PausedReason = true, llm.PausedReason(rq)
		}
	}
	return q
}
