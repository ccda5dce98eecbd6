package api

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mullhq/mull/llm"
)

// health is the /healthz body.
type health struct {
	// Status is "ok"; "unhealthy" when this process is broken (database,
	// migrations, its own workers); "degraded" when jobs wait and no
	// worker process anywhere has a live heartbeat.
	Status string `json:"status"`
	// Reason says why the status is not "ok".
	Reason     string `json:"reason,omitempty"`
	Database   check  `json:"database"`
	Migrations check  `json:"migrations"`
	Workers    check  `json:"workers"`
	// Heartbeats is whether any worker process (this one or another on the
	// same database) beat within workers.dead_after.
	Heartbeats check `json:"heartbeats"`
	// Queues maps queue → state → job count.
	Queues map[string]map[string]int64 `json:"queues"`
	// LLM is "ok", "paused: no key" (no DEEPSEEK_API_KEY: the llm queue
	// waits, healthy) or "paused: REASON" (a 402, an operator).
	LLM string `json:"llm"`
}

type check struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// WorkersDisabled marks a process that serves HTTP only (serve --workers=false).
func (s *Server) WorkersDisabled() { s.workersOff.Store(true) }

// health checks this process and the queue: the body of /healthz and the
// panel's overview, and the status code /healthz answers with.
func (s *Server) health(ctx context.Context) (health, int) {
	h := health{Status: "ok", Queues: map[string]map[string]int64{}}
	h.Database = check{OK: true, Detail: s.deps.Store.Where}
	if err := s.deps.Store.Ping(ctx); err != nil {
		h.Database = check{Detail: err.Error()}
	}
	h.Migrations = check{OK: true}
	if n, err := s.deps.Store.MigrationsPending(ctx); err != nil {
		h.Migrations = check{Detail: err.Error()}
	} else if n > 0 {
		h.Migrations = check{Detail: "pending migrations; run `mull migrate`"}
	}
	switch {
	case s.workersOff.Load():
		h.Workers = check{OK: true, Detail: "disabled in this process"}
	case s.working.Load():
		h.Workers = check{OK: true, Detail: "running"}
	default:
		h.Workers = check{Detail: "not running"}
	}
	if counts, err := s.deps.Store.JobCounts(ctx); err == nil {
		for _, c := range counts {
			if h.Queues[c.Queue] == nil {
				h.Queues[c.Queue] = map[string]int64{}
			}
			h.Queues[c.Queue][c.State] += c.N
		}
	}
	h.LLM = s.llmState(ctx)
	h.Heartbeats, h.Reason = s.heartbeats(ctx)
	status := http.StatusOK
	switch {
	case !h.Database.OK || !h.Migrations.OK || !h.Workers.OK:
		h.Status, h.Reason, status = "unhealthy", unhealthyReason(h), http.StatusServiceUnavailable
	case h.Reason != "":
		h.Status, status = "degraded", http.StatusServiceUnavailable
	}
	return h, status
}

// healthz answers 200 or 503 with the status; the details (database,
// migrations, workers, queues) only to loopback or the admin token.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	h, status := s.health(ctx)
	if !isLoopback(r.RemoteAddr) && !s.isAdmin(r) {
		// Where the database is and what is queued is for the operator.
		// Degraded says why: no worker runs, which names neither.
		public := struct {
			Status string `json:"status"`
			Reason string `json:"reason,omitempty"`
		}{Status: h.Status}
		if h.Status == "degraded" {
			public.Reason = h.Reason
		}
		writeJSON(w, status, public)
		return
	}
	writeJSON(w, status, h)
}

// llmState says whether LLM jobs can run: not without an API key, nor while
// the llm queue is paused.
func (s *Server) llmState(ctx context.Context) string {
	if s.deps.Config.LLM.APIKey == "" {
		return "paused: no key"
	}
	if s.deps.Client == nil {
		return "ok"
	}
	q, err := s.deps.Client.QueueGet(ctx, "llm")
	if err != nil || q.PausedAt == nil {
		return "ok"
	}
	if r := llm.PausedReason(q); r != "" {
		return "paused: " + r
	}
	return "paused"
}

// heartbeats checks that some worker process is alive when jobs wait for
// one. Jobs available on a queue that is not paused, with no heartbeat
// within workers.dead_after anywhere, pile up unseen: that is degraded,
// and reason says so. A paused queue's jobs wait for an operator instead.
func (s *Server) heartbeats(ctx context.Context) (check, string) {
	deadAfter := s.deps.Config.Workers.DeadAfter.D()
	live, err := s.deps.Store.LiveWorkers(ctx, s.deps.Now().Add(-deadAfter))
	if err != nil {
		return check{Detail: err.Error()}, ""
	}
	if live > 0 {
		return check{OK: true, Detail: fmt.Sprintf("%d live", live)}, ""
	}
	avail, err := s.deps.Store.AvailableJobs(ctx)
	if err != nil {
		return check{Detail: err.Error()}, ""
	}
	var n int64
	for _, c := range avail {
		n += c
	}
	detail := fmt.Sprintf("no worker heartbeat within %s", deadAfter)
	if n == 0 {
		return check{OK: true, Detail: detail + "; no job is waiting"}, ""
	}
	return check{Detail: fmt.Sprintf("%s; %d jobs available on %s", detail, n, strings.Join(slices.Sorted(maps.Keys(avail)), ", "))},
		"jobs are available and no worker has a live heartbeat; start `mull worker` or `mull serve`"
}

// unhealthyReason names the first failed check.
func unhealthyReason(h health) string {
	switch {
	case !h.Database.OK:
		return "database unreachable"
	case !h.Migrations.OK:
		return "migrations pending"
	}
	return "this process's workers are not running"
}
