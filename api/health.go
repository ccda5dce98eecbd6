package api

import (
	"context"
	"net/http"
	"time"

	"github.com/mullhq/mull/llm"
)

// health is the /healthz body.
type health struct {
	Status     string `json:"status"`
	Database   check  `json:"database"`
	Migrations check  `json:"migrations"`
	Workers    check  `json:"workers"`
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

// healthz answers 200 or 503 with the status; the details (database,
// migrations, workers, queues) only to loopback or the admin token.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
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
	status := http.StatusOK
	if !h.Database.OK || !h.Migrations.OK || !h.Workers.OK {
		h.Status, status = "unhealthy", http.StatusServiceUnavailable
	}
	if !isLoopback(r.RemoteAddr) && !s.isAdmin(r) {
		// Where the database is and what is queued is for the operator.
		writeJSON(w, status, struct {
			Status string `json:"status"`
		}{h.Status})
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
