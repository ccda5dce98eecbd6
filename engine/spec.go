// Package engine is mull's job registry: each job kind declares, in one Spec,
// the queue it runs on, its attempts, backoff, timeout and priority, and the
// registry applies those to every insert and every worker of that kind.
package engine

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/mullhq/mull/config"
)

// Spec declares how one job kind runs. It holds no kind: the kind is its
// Args type's Kind(), which Add reads, so a kind is spelled once.
type Spec struct {
	// Queue the kind's jobs go to. Defaults to "default".
	Queue string
	// MaxAttempts before a job is discarded (the dead letters). Defaults to 5.
	MaxAttempts int
	// Backoff is the fixed delay before a retry. Zero uses River's policy
	// (attempt⁴ seconds).
	Backoff time.Duration
	// Timeout cancels a job's context after this long. Defaults to 1 minute.
	Timeout time.Duration
	// Priority from 1 (first) to 4. Defaults to 1.
	Priority int
	// LLM says the kind calls DeepSeek: a worker with no API key pauses
	// the queues of such kinds before it starts.
	LLM bool
}

func (s Spec) withDefaults() Spec {
	s.Queue = cmp.Or(s.Queue, "default")
	s.MaxAttempts = cmp.Or(s.MaxAttempts, 5)
	s.Timeout = cmp.Or(s.Timeout, time.Minute)
	s.Priority = cmp.Or(s.Priority, 1)
	return s
}

func (s Spec) override(o config.JobOverride) Spec {
	s.Queue = cmp.Or(o.Queue, s.Queue)
	s.MaxAttempts = cmp.Or(o.MaxAttempts, s.MaxAttempts)
	s.Backoff = cmp.Or(o.Backoff.D(), s.Backoff)
	s.Timeout = cmp.Or(o.Timeout.D(), s.Timeout)
	s.Priority = cmp.Or(o.Priority, s.Priority)
	return s
}

// Entry is a registered kind with its effective spec (defaults and the
// config's [jobs.KIND] override applied).
type Entry struct {
	// Kind is the River job kind, from the Args type's Kind(): snake_case
	// and stable, it is stored with every job.
	Kind string
	Spec
}

// Registry holds the specs and workers of every job kind a process knows,
// and what the kinds asked for besides their workers: built-in cron
// entries and ingest hooks (see wiring.go).
type Registry struct {
	specs     map[string]Spec
	overrides map[string]config.JobOverride
	workers   *river.Workers
	wiring
}

// NewRegistry makes an empty registry; overrides come from config [jobs.KIND].
func NewRegistry(overrides map[string]config.JobOverride) *Registry {
	return &Registry{specs: map[string]Spec{}, overrides: overrides, workers: river.NewWorkers()}
}

// Add registers a worker under its spec, for the kind its Args name
// (T's Kind(), on the zero value: give Kind a value receiver), with the
// config's override applied. It panics on a wiring mistake (a kind added
// twice, an empty kind), which main finds at boot.
func Add[T river.JobArgs](r *Registry, spec Spec, w river.Worker[T]) {
	var args T
	kind := args.Kind()
	if kind == "" {
		panic(fmt.Sprintf("jobs: args type %T has an empty Kind()", args))
	}
	if _, dup := r.specs[kind]; dup {
		panic(fmt.Sprintf("jobs: kind %q registered twice", kind))
	}
	spec = spec.withDefaults().override(r.overrides[kind])
	r.specs[kind] = spec
	river.AddWorker[T](r.workers, &specWorker[T]{Worker: w, spec: spec})
}

// Spec returns a kind's effective spec.
func (r *Registry) Spec(kind string) (Spec, bool) {
	s, ok := r.specs[kind]
	return s, ok
}

// Specs lists every registered kind with its effective spec, by kind.
func (r *Registry) Specs() []Entry {
	out := make([]Entry, 0, len(r.specs))
	for _, k := range r.kinds() {
		out = append(out, Entry{Kind: k, Spec: r.specs[k]})
	}
	return out
}

// Workers is the River worker bundle.
func (r *Registry) Workers() *river.Workers { return r.workers }

// CheckOverrides reports a [jobs.KIND] override for a kind nobody registered.
func (r *Registry) CheckOverrides() error {
	for _, kind := range slices.Sorted(maps.Keys(r.overrides)) {
		if _, ok := r.specs[kind]; !ok {
			return &config.Error{Key: "jobs." + kind, Problem: fmt.Sprintf("no job kind %q (known: %v)", kind, r.kinds())}
		}
	}
	return nil
}

func (r *Registry) kinds() []string { return slices.Sorted(maps.Keys(r.specs)) }

// LongestTimeout is the largest timeout of any kind.
func (r *Registry) LongestTimeout() time.Duration {
	var d time.Duration
	for _, s := range r.specs {
		d = max(d, s.Timeout)
	}
	return d
}

// Queues lists the queues that registered kinds use.
func (r *Registry) Queues() []string {
	set := map[string]bool{}
	for _, s := range r.specs {
		set[s.Queue] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// specWorker gives a worker its spec's timeout and backoff.
type specWorker[T river.JobArgs] struct {
	river.Worker[T]
	spec Spec
}

func (w *specWorker[T]) Timeout(*river.Job[T]) time.Duration { return w.spec.Timeout }

func (w *specWorker[T]) NextRetry(job *river.Job[T]) time.Time {
	if next := w.Worker.NextRetry(job); !next.IsZero() {
		return next
	}
	if w.spec.Backoff > 0 {
		return time.Now().Add(w.spec.Backoff)
	}
	return time.Time{}
}

// insertMiddleware stamps every insert of a registered kind with its spec's
// queue, attempts and priority, so no insert path can forget them.
type insertMiddleware struct {
	river.MiddlewareDefaults
	r *Registry
}

// InsertMiddleware is the River insert middleware that applies the specs.
func (r *Registry) InsertMiddleware() rivertype.JobInsertMiddleware { return &insertMiddleware{r: r} }

func (m *insertMiddleware) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams,
	doInner func(context.Context) ([]*rivertype.JobInsertResult, error),
) ([]*rivertype.JobInsertResult, error) {
	for _, p := range params {
		if s, ok := m.r.specs[p.Kind]; ok {
			p.Queue, p.MaxAttempts, p.Priority = s.Queue, s.MaxAttempts, s.Priority
		}
	}
	return doInner(ctx)
}
