package config

import (
	"cmp"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Ingest configures POST /v1/events.
type Ingest struct {
	// MaxBody is the largest request body in bytes; larger gets 413.
	// Defaults to 4 MiB. Env: MULL_INGEST_MAX_BODY.
	MaxBody int64 `toml:"max_body"`
	// IdleTimeout ends a session that sent nothing for this long (its
	// session-end jobs run as if it had ended). Defaults to 30m.
	// Env: MULL_INGEST_IDLE_TIMEOUT.
	IdleTimeout Duration `toml:"idle_timeout"`
}

// DSH says where DSH keeps its session logs, for `mull import dsh` and
// `mull serve --watch-dsh`.
type DSH struct {
	// Home is DSH's home. Defaults to $DSH_HOME, else ~/.dsh. Env: MULL_DSH_HOME.
	Home string `toml:"home"`
	// WatchInterval is how often --watch-dsh looks for new lines.
	// Defaults to 5s. Env: MULL_DSH_WATCH_INTERVAL.
	WatchInterval Duration `toml:"watch_interval"`
}

// Memory configures the memory store.
type Memory struct {
	// Scope: "workspace" (default) keeps and serves memories per workspace;
	// "global" one library for all; "both" serves the workspace's, then the
	// global library in the space left, and promotes the best to global.
	// Env: MULL_MEMORY_SCOPE.
	Scope string `toml:"scope"`
}

// Digest configures the memory section DSH injects.
type Digest struct {
	// Budget is the section's size in characters, wrapper included.
	// Defaults to 3200; the wrapper takes 260 of it.
	Budget int `toml:"budget"`
	// Wrapper is what the frame around the sections takes. Defaults to 260.
	Wrapper int `toml:"wrapper"`
	// MaxLines caps each section. Defaults to 40.
	MaxLines int `toml:"max_lines"`
	// Quotas are each section's characters. Defaults: handoff 700,
	// prefetch 800 (its entries' text, as consolidation counts it),
	// principles 600, hypotheses 400, facts 900, lessons 900, methods 700,
	// resources 700.
	Quotas map[string]int `toml:"quotas"`
	// WatermarkItems: the digest is rebuilt after this many new memories
	// (or invalidations) of the kinds that are not lessons; lesson changes
	// count toward lessons.commit_every instead… Defaults to 5.
	WatermarkItems int `toml:"watermark_items"`
	// WatermarkAge: …or when the oldest unpublished one is this old.
	// Defaults to 30m. Between rebuilds new items are served as notices.
	WatermarkAge Duration `toml:"watermark_age"`
}

// DigestSections are the digest's sections, highest priority first.
var DigestSections = []string{"handoff", "proposals", "prefetch", "principles", "hypotheses",
	"facts", "lessons", "methods", "resources", "playbooks"}

func (i Ingest) withDefaults() Ingest {
	i.MaxBody = cmp.Or(i.MaxBody, 4<<20)
	i.IdleTimeout = cmp.Or(i.IdleTimeout, Duration(30*time.Minute))
	return i
}

func (i Ingest) validate() error {
	if i.MaxBody < 1024 || i.MaxBody > 1<<30 {
		return bad("ingest.max_body", "must be between 1024 and 1073741824 bytes, got %d", i.MaxBody)
	}
	if i.IdleTimeout < Duration(time.Minute) {
		return bad("ingest.idle_timeout", "must be at least 1m, got %s", i.IdleTimeout)
	}
	return nil
}

func (d DSH) withDefaults() DSH {
	if d.Home == "" {
		d.Home = os.Getenv("DSH_HOME")
	}
	if d.Home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			d.Home = filepath.Join(h, ".dsh")
		}
	}
	d.WatchInterval = cmp.Or(d.WatchInterval, Duration(5*time.Second))
	return d
}

func (d DSH) validate() error {
	if d.WatchInterval < Duration(100*time.Millisecond) {
		return bad("dsh.watch_interval", "must be at least 100ms, got %s", d.WatchInterval)
	}
	return nil
}

func (m Memory) withDefaults() Memory {
	m.Scope = cmp.Or(m.Scope, "workspace")
	return m
}

func (m Memory) validate() error {
	switch m.Scope {
	case "workspace", "global", "both":
		return nil
	}
	return bad("memory.scope", "%q is not one of workspace, global, both", m.Scope)
}

func (d Digest) withDefaults() Digest {
	d.Budget = cmp.Or(d.Budget, 3200)
	d.Wrapper = cmp.Or(d.Wrapper, 260)
	d.MaxLines = cmp.Or(d.MaxLines, 40)
	defaults := map[string]int{"handoff": 700, "prefetch": 800, "principles": 600, "hypotheses": 400,
		"facts": 900, "lessons": 900, "methods": 700, "resources": 700}
	q := maps.Clone(defaults)
	maps.Copy(q, d.Quotas)
	d.Quotas = q
	d.WatermarkItems = cmp.Or(d.WatermarkItems, 5)
	d.WatermarkAge = cmp.Or(d.WatermarkAge, Duration(30*time.Minute))
	return d
}

func (d Digest) validate() error {
	if d.Budget < 500 || d.Wrapper < 0 || d.Wrapper >= d.Budget {
		return bad("digest.budget", "must be at least 500 and larger than digest.wrapper (%d), got %d", d.Wrapper, d.Budget)
	}
	if d.MaxLines < 1 {
		return bad("digest.max_lines", "must be at least 1, got %d", d.MaxLines)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Quotas)) {
		if !slices.Contains(DigestSections, k) {
			return bad("digest.quotas."+k, "no such section (sections: %v)", DigestSections)
		}
		if d.Quotas[k] < 0 {
			return bad("digest.quotas."+k, "must not be negative")
		}
	}
	if d.WatermarkItems < 1 || d.WatermarkAge <= 0 {
		return bad("digest.watermark_items", "watermark_items must be at least 1 and watermark_age positive")
	}
	return nil
}
