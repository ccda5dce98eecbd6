package api

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mullhq/mull/memstatus"
)

// memErrors counts the memory reads (digest, notices, search) and writes
// (remember, forget, promote) of each workspace that failed in this
// process: a write that stored nothing (refused as bad input, or failed)
// and a read the store failed. memory_status reports them, as the seed's
// selfip_status reported its readErrors and writeErrors; Prometheus gets
// the totals (mull_memory_errors_total).
type memErrors struct {
	since time.Time
	total *prometheus.CounterVec
	mu    sync.Mutex
	byWS  map[string]*memstatus.Errors
}

// maxErrorWorkspaces bounds the workspaces counted one by one; past it a
// new workspace's errors only reach the totals.
const maxErrorWorkspaces = 10000

func newMemErrors(reg *prometheus.Registry, now time.Time) *memErrors {
	m := &memErrors{since: now.UTC(), byWS: map[string]*memstatus.Errors{},
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mull_memory_errors_total",
			Help: "Memory reads (digest, notices, search) the store failed, and memory writes (remember, forget, promote) that stored nothing, in this process, by op.",
		}, []string{"op"})}
	m.total.WithLabelValues("read")
	m.total.WithLabelValues("write")
	reg.MustRegister(m.total)
	return m
}

// count records one failed read or write of workspace.
func (m *memErrors) count(workspace string, write bool, msg string, at time.Time) {
	op := "read"
	if write {
		op = "write"
	}
	m.total.WithLabelValues(op).Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.byWS[workspace]
	if e == nil {
		if len(m.byWS) >= maxErrorWorkspaces {
			return
		}
		e = &memstatus.Errors{}
		m.byWS[workspace] = e
	}
	if write {
		e.Write++
	} else {
		e.Read++
	}
	at = at.UTC()
	e.Last, e.LastAt = op+": "+msg, &at
}

// of is workspace's counts.
func (m *memErrors) of(workspace string) memstatus.Errors {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := memstatus.Errors{Counted: true}
	if e := m.byWS[workspace]; e != nil {
		out = *e
		out.Counted = true
	}
	since := m.since
	out.Since = &since
	return out
}
