package config

import (
	"cmp"
	"time"
)

// Learn says which sessions mull learns from on its own.
type Learn struct {
	// MaxSessionAge: a session whose last event is older is history, as is
	// one mull only imported from DSH's logs: no automatic retro, error
	// retro or consolidation trigger for it (`mull import dsh --learn`
	// asks for them). Defaults to 24h. Env: MULL_LEARN_MAX_SESSION_AGE.
	MaxSessionAge Duration `toml:"max_session_age"`
}

func (l Learn) withDefaults() Learn {
	l.MaxSessionAge = cmp.Or(l.MaxSessionAge, Duration(24*time.Hour))
	return l
}

func (l Learn) validate() error {
	if l.MaxSessionAge < Duration(time.Minute) {
		return bad("learn.max_session_age", "must be at least 1m, got %s", l.MaxSessionAge)
	}
	return nil
}

// Retro configures the retrospectives (retro_session, retro_error). Their
// attempts and backoff are the job kinds' own: [jobs.retro_session] and
// [jobs.retro_error] override the seed's 5 attempts 30 minutes apart.
type Retro struct {
	// ErrorDelay is how long after an agent error its retro_error job runs,
	// so a burst of errors gives one retro. Defaults to 6s (the seed's);
	// 0 also means the default, since a retro that ran at once would miss
	// the rest of the burst. Env: MULL_RETRO_ERROR_DELAY.
	ErrorDelay Duration `toml:"error_delay"`
	// ErrorMinGap is the least time between two retros of one session.
	// Defaults to 60s (0 also means the default).
	// Env: MULL_RETRO_ERROR_MIN_GAP.
	ErrorMinGap Duration `toml:"error_min_gap"`
	// ErrorMaxPerSession caps the error retros of one session. Defaults
	// to 3. Env: MULL_RETRO_ERROR_MAX_PER_SESSION.
	ErrorMaxPerSession int `toml:"error_max_per_session"`
	// Excerpt bounds the evidence one retro reads from the store.
	Excerpt Excerpt `toml:"excerpt"`
}

// Excerpt bounds a retro's excerpt of its session: how many of the newest
// items of each kind it takes, and how long it may be. The defaults are the
// seed's numbers; a larger excerpt costs input tokens on every retro (the
// fixed part of the prompt is cached, the excerpt is not).
type Excerpt struct {
	// Errors: the newest agent errors. Defaults to 15.
	// Env: MULL_RETRO_EXCERPT_ERRORS.
	Errors int `toml:"errors"`
	// ToolFailures: the newest failed tool calls, with their commands.
	// Defaults to 8. Env: MULL_RETRO_EXCERPT_TOOL_FAILURES.
	ToolFailures int `toml:"tool_failures"`
	// Feedback: how many of the newest thumbs-down to take. Defaults to 0,
	// every one of them (the seed's rule); they are the last evidence
	// max_chars drops. Env: MULL_RETRO_EXCERPT_FEEDBACK.
	Feedback int `toml:"feedback"`
	// Transcript: the last transcript entries. Defaults to 12.
	// Env: MULL_RETRO_EXCERPT_TRANSCRIPT.
	Transcript int `toml:"transcript"`
	// MaxChars caps the whole excerpt, in characters. Defaults to 3500.
	// Env: MULL_RETRO_EXCERPT_MAX_CHARS.
	MaxChars int `toml:"max_chars"`
	// ItemChars cuts each item's text. Defaults to 300.
	// Env: MULL_RETRO_EXCERPT_ITEM_CHARS.
	ItemChars int `toml:"item_chars"`
}

// Consolidate configures sleep-time consolidation (the consolidate job).
type Consolidate struct {
	// Schedule is when every workspace with new memory is consolidated, a
	// cron expression in UTC. Defaults to "30 18 * * *": 18:30 UTC, in
	// DeepSeek's off-peak hours (half price) every day. "off" disables it.
	// Env: MULL_CONSOLIDATE_SCHEDULE.
	Schedule string `toml:"schedule"`
	// AfterSessions also consolidates a workspace once this many of its
	// sessions have ended since its last run. Defaults to 5; 0 would mean
	// never, so it must be at least 1. Env: MULL_CONSOLIDATE_AFTER_SESSIONS.
	AfterSessions int `toml:"after_sessions"`
	// Cooldown is the least time between two runs of one workspace that
	// were not asked for by hand. Defaults to 6h (the seed's).
	// Env: MULL_CONSOLIDATE_COOLDOWN.
	Cooldown Duration `toml:"cooldown"`
	// ChunkChars caps the memory text one merge call reads; a larger
	// workspace is split into chunks, one workflow step each. Defaults to
	// 6000. Env: MULL_CONSOLIDATE_CHUNK_CHARS.
	ChunkChars int `toml:"chunk_chars"`
	// MinMemories: a workspace with fewer live memories gets no derived
	// principles, hypotheses or prefetch (there is too little to derive
	// from). Defaults to 8. Env: MULL_CONSOLIDATE_MIN_MEMORIES.
	MinMemories int `toml:"min_memories"`
	// DeriveChars caps the memory text the derive call (principles,
	// hypotheses, prefetch) reads. Defaults to 8000.
	// Env: MULL_CONSOLIDATE_DERIVE_CHARS.
	DeriveChars int `toml:"derive_chars"`
	// TriggerDelay is how long after the after_sessions-th session end the
	// run starts, so that session's own retro lands first. Defaults to 5m.
	// Env: MULL_CONSOLIDATE_TRIGGER_DELAY.
	TriggerDelay Duration `toml:"trigger_delay"`
}

// Off reports a disabled schedule.
func (c Consolidate) Off() bool { return c.Schedule == "off" }

func (r Retro) withDefaults() Retro {
	r.ErrorDelay = cmp.Or(r.ErrorDelay, Duration(6*time.Second))
	r.ErrorMinGap = cmp.Or(r.ErrorMinGap, Duration(60*time.Second))
	r.ErrorMaxPerSession = cmp.Or(r.ErrorMaxPerSession, 3)
	e := &r.Excerpt
	e.Errors = cmp.Or(e.Errors, 15)
	e.ToolFailures = cmp.Or(e.ToolFailures, 8)
	e.Transcript = cmp.Or(e.Transcript, 12)
	e.MaxChars = cmp.Or(e.MaxChars, 3500)
	e.ItemChars = cmp.Or(e.ItemChars, 300)
	return r
}

func (r Retro) validate() error {
	if r.ErrorDelay < Duration(time.Second) || r.ErrorDelay > Duration(time.Hour) {
		return bad("retro.error_delay", "must be between 1s and 1h, got %s", r.ErrorDelay)
	}
	if r.ErrorMinGap < 0 || r.ErrorMinGap > Duration(24*time.Hour) {
		return bad("retro.error_min_gap", "must be between 0s and 24h, got %s", r.ErrorMinGap)
	}
	if r.ErrorMaxPerSession < 1 || r.ErrorMaxPerSession > 100 {
		return bad("retro.error_max_per_session", "must be between 1 and 100, got %d", r.ErrorMaxPerSession)
	}
	e := r.Excerpt
	for _, n := range []struct {
		key string
		v   int
	}{{"errors", e.Errors}, {"tool_failures", e.ToolFailures}, {"transcript", e.Transcript}} {
		if n.v < 1 || n.v > 200 {
			return bad("retro.excerpt."+n.key, "must be between 1 and 200, got %d", n.v)
		}
	}
	if e.Feedback < 0 || e.Feedback > 1000 {
		return bad("retro.excerpt.feedback", "must be between 0 (every thumbs-down) and 1000, got %d", e.Feedback)
	}
	if e.MaxChars < 500 || e.MaxChars > 100000 {
		return bad("retro.excerpt.max_chars", "must be between 500 and 100000, got %d", e.MaxChars)
	}
	if e.ItemChars < 40 || e.ItemChars > e.MaxChars {
		return bad("retro.excerpt.item_chars", "must be between 40 and retro.excerpt.max_chars (%d), got %d", e.MaxChars, e.ItemChars)
	}
	return nil
}

func (c Consolidate) withDefaults() Consolidate {
	c.Schedule = cmp.Or(c.Schedule, "30 18 * * *")
	c.AfterSessions = cmp.Or(c.AfterSessions, 5)
	c.Cooldown = cmp.Or(c.Cooldown, Duration(6*time.Hour))
	c.ChunkChars = cmp.Or(c.ChunkChars, 6000)
	c.MinMemories = cmp.Or(c.MinMemories, 8)
	c.DeriveChars = cmp.Or(c.DeriveChars, 8000)
	c.TriggerDelay = cmp.Or(c.TriggerDelay, Duration(5*time.Minute))
	return c
}

func (c Consolidate) validate() error {
	if !c.Off() {
		if _, err := ParseCron(c.Schedule); err != nil {
			return bad("consolidate.schedule", "cannot parse %q: %v (or say \"off\")", c.Schedule, err)
		}
	}
	if c.AfterSessions < 1 || c.AfterSessions > 10000 {
		return bad("consolidate.after_sessions", "must be between 1 and 10000, got %d", c.AfterSessions)
	}
	if c.Cooldown < 0 || c.Cooldown > Duration(30*24*time.Hour) {
		return bad("consolidate.cooldown", "must be between 0s and 720h, got %s", c.Cooldown)
	}
	if c.ChunkChars < 1000 || c.ChunkChars > 200000 {
		return bad("consolidate.chunk_chars", "must be between 1000 and 200000, got %d", c.ChunkChars)
	}
	if c.MinMemories < 1 || c.MinMemories > 100000 {
		return bad("consolidate.min_memories", "must be between 1 and 100000, got %d", c.MinMemories)
	}
	if c.DeriveChars < 1000 || c.DeriveChars > 200000 {
		return bad("consolidate.derive_chars", "must be between 1000 and 200000, got %d", c.DeriveChars)
	}
	if c.TriggerDelay < Duration(time.Second) || c.TriggerDelay > Duration(24*time.Hour) {
		return bad("consolidate.trigger_delay", "must be between 1s and 24h, got %s", c.TriggerDelay)
	}
	return nil
}
