package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mull.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	c, err := config.Load(config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "./.mull" || c.Listen != "127.0.0.1:7788" || c.Log.Level != "info" || c.Log.Format != "auto" {
		t.Fatalf("defaults: %+v", c)
	}
	if c.Workers.ShutdownGrace.D() != 30*time.Second || c.Retention.Discarded != 0 {
		t.Fatalf("worker defaults: %+v %+v", c.Workers, c.Retention)
	}
	db, err := config.ParseDatabaseURL(c.DatabaseURL, c.DataDir)
	if err != nil || db.Dialect != "sqlite" || db.Path != filepath.Join(".mull", "mull.db") {
		t.Fatalf("default database = %+v, %v", db, err)
	}
	// The seed's commitEvery.
	if c.Lessons.CommitEvery != 8 {
		t.Fatalf("lessons.commit_every = %d, want the seed's 8", c.Lessons.CommitEvery)
	}
}

// The spending guards of issue 9 are on by default, and the environment
// sets them.
func TestSpendDefaults(t *testing.T) {
	c, err := config.Load(config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Learn.MaxSessionAge.D() != 24*time.Hour || c.LLM.MaxRetryAfter.D() != time.Hour || c.LLM.MaxSnoozes != 12 {
		t.Fatalf("defaults: learn %+v, max_retry_after %s, max_snoozes %d", c.Learn, c.LLM.MaxRetryAfter, c.LLM.MaxSnoozes)
	}
	if c.Budget.Global != 2_000_000 || c.Budget.Limits["global"].Tokens != 2_000_000 || c.Budget.Limits["workspace:*"].Tokens != 400_000 {
		t.Fatalf("budget defaults: %+v", c.Budget)
	}
	c, err = config.Load(config.Source{Environ: []string{"MULL_LEARN_MAX_SESSION_AGE=2h", "MULL_BUDGET_GLOBAL=1000",
		"MULL_LLM_MAX_RETRY_AFTER=5m", "MULL_LLM_MAX_SNOOZES=3"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Learn.MaxSessionAge.D() != 2*time.Hour || c.Budget.Limits["global"].Tokens != 1000 ||
		c.LLM.MaxRetryAfter.D() != 5*time.Minute || c.LLM.MaxSnoozes != 3 {
		t.Fatalf("from the environment: %+v %+v %s %d", c.Learn, c.Budget, c.LLM.MaxRetryAfter, c.LLM.MaxSnoozes)
	}
	// A "global" limit of its own wins over budget.global.
	c, err = config.Load(config.Source{File: write(t, "[budget]\nglobal = 1000\n[budget.limits]\n\"global\" = { usd = 2.0 }\n")})
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Budget.Limits["global"]; g.Tokens != 0 || g.USD != 2 {
		t.Fatalf("explicit global limit: %+v", g)
	}
}

func TestPrecedence(t *testing.T) {
	file := write(t, `
listen = "127.0.0.1:1111"
data_dir = "from-file"
[log]
level = "debug"
[workers]
shutdown_grace = "5s"
`)
	c, err := config.Load(config.Source{
		File:    file,
		Environ: []string{"MULL_LISTEN=127.0.0.1:2222", "MULL_WORKERS_SHUTDOWN_GRACE=7s", "MULL_LOG_LEVEL=warn", "OTHER=1"},
		Flags:   map[string]string{"log.level": "error"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "from-file" {
		t.Errorf("data_dir = %q, want the file's", c.DataDir)
	}
	if c.Listen != "127.0.0.1:2222" || c.Workers.ShutdownGrace.D() != 7*time.Second {
		t.Errorf("env should override the file: listen %q grace %s", c.Listen, c.Workers.ShutdownGrace)
	}
	if c.Log.Level != "error" {
		t.Errorf("flag should override env: log.level %q", c.Log.Level)
	}
}

func TestInvalidConfigNamesTheKey(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		env     []string
		wantKey string
		wantMsg string
	}{
		{"bad cron", "[[cron]]\nkind = \"probe\"\nschedule = \"61 * * * *\"\n", nil, "cron[0].schedule", "cannot parse"},
		{"cron missing kind", "[[cron]]\nschedule = \"@hourly\"\n", nil, "cron[0].kind", "job kind"},
		{"cron args not JSON", "[[cron]]\nkind = \"probe\"\nschedule = \"@hourly\"\nargs = \"[1\"\n", nil, "cron[0].args", "JSON object"},
		{"bad cron name", "[[cron]]\nname = \"a b\"\nkind = \"probe\"\nschedule = \"@hourly\"\n", nil, "cron[0].name", "letters, digits"},
		{"duplicate cron name", "[[cron]]\nkind = \"probe\"\nschedule = \"@hourly\"\n[[cron]]\nkind = \"probe\"\nschedule = \"@daily\"\n", nil, "cron[1].name", "earlier entry"},
		{"unknown key", "lisen = \"x\"\n", nil, "lisen", "unknown key"},
		{"unknown nested key", "[workers]\nqueue = {}\n", nil, "workers.queue", "unknown key"},
		{"negative worker count", "[workers.queues]\ndefault = -1\n", nil, "workers.queues.default", "between 1"},
		{"negative grace", "[workers]\nshutdown_grace = \"-1s\"\n", nil, "workers.shutdown_grace", "negative"},
		{"negative attempts", "[jobs.probe]\nmax_attempts = -3\n", nil, "jobs.probe.max_attempts", "between"},
		{"bad duration", "[workers]\nshutdown_grace = \"soon\"\n", nil, "config", "invalid duration"},
		{"bad database url", "", []string{"MULL_DATABASE_URL=mysql://x"}, "database_url", "unsupported scheme"},
		{"postgres without host", "", []string{"MULL_DATABASE_URL=postgres:///db"}, "database_url", "no host"},
		{"bad listen", "", []string{"MULL_LISTEN=7788"}, "listen", "host:port"},
		{"bad env number", "", []string{"MULL_WORKERS_SHUTDOWN_GRACE=abc"}, "MULL_WORKERS_SHUTDOWN_GRACE", "invalid duration"},
		{"bad log level", "", []string{"MULL_LOG_LEVEL=loud"}, "log.level", "debug, info"},
		{"retired model", "[llm.kinds.retro_session]\nmodel = \"deepseek-chat\"\n", nil, "llm.kinds.retro_session.model", "retired"},
		{"bad peak window", "[llm]\npeak = [\"10:00-09:00\"]\n", nil, "llm.peak[0]", "ends before"},
		{"bad budget key", "[budget.limits]\n\"team:x\" = { tokens = 5 }\n", nil, "budget.limits.team:x", "budget key"},
		{"unknown digest section", "[digest.quotas]\nnews = 100\n", nil, "digest.quotas.news", "no such section"},
		{"negative commit_every", "[lessons]\ncommit_every = -1\n", nil, "lessons.commit_every", "between 1 and 1000"},
		{"huge commit_every env", "", []string{"MULL_LESSONS_COMMIT_EVERY=1001"}, "lessons.commit_every", "between 1 and 1000"},
		{"bad memory scope", "[memory]\nscope = \"team\"\n", nil, "memory.scope", "not one of"},
		{"bad retro cap", "[retro]\nerror_max_per_session = 500\n", nil, "retro.error_max_per_session", "between 1 and 100"},
		{"bad retro gap env", "", []string{"MULL_RETRO_ERROR_MIN_GAP=-1s"}, "retro.error_min_gap", "between"},
		{"retro delay under a second", "[retro]\nerror_delay = \"200ms\"\n", nil, "retro.error_delay", "between 1s and 1h"},
		{"bad excerpt count", "[retro.excerpt]\nerrors = 0\ntranscript = -3\n", nil, "retro.excerpt.transcript", "between 1 and 200"},
		{"bad excerpt size env", "", []string{"MULL_RETRO_EXCERPT_MAX_CHARS=100"}, "retro.excerpt.max_chars", "between 500"},
		{"excerpt item over total", "[retro.excerpt]\nmax_chars = 1000\nitem_chars = 2000\n", nil, "retro.excerpt.item_chars", "max_chars (1000)"},
		{"bad consolidate trigger delay", "", []string{"MULL_CONSOLIDATE_TRIGGER_DELAY=25h"}, "consolidate.trigger_delay", "between 1s and 24h"},
		{"bad derive chars", "[consolidate]\nderive_chars = 5\n", nil, "consolidate.derive_chars", "between 1000"},
		{"bad consolidate schedule", "[consolidate]\nschedule = \"nightly\"\n", nil, "consolidate.schedule", "cannot parse"},
		{"bad consolidate chunk", "", []string{"MULL_CONSOLIDATE_CHUNK_CHARS=10"}, "consolidate.chunk_chars", "between 1000"},
		{"toml syntax", "listen = \n", nil, "config", "line 1"},
		{"session age under a minute", "", []string{"MULL_LEARN_MAX_SESSION_AGE=30s"}, "learn.max_session_age", "at least 1m"},
		{"negative session age", "[learn]\nmax_session_age = \"-1h\"\n", nil, "learn.max_session_age", "at least 1m"},
		{"negative global budget", "", []string{"MULL_BUDGET_GLOBAL=-5"}, "budget.global", "negative"},
		{"retry-after cap too long", "", []string{"MULL_LLM_MAX_RETRY_AFTER=48h"}, "llm.max_retry_after", "between 1s and 24h"},
		{"too many snoozes", "[llm]\nmax_snoozes = 5000\n", nil, "llm.max_snoozes", "between 1 and 1000"},
		{"negative snoozes env", "", []string{"MULL_LLM_MAX_SNOOZES=-1"}, "llm.max_snoozes", "between 1 and 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := config.Source{Environ: tt.env}
			if tt.file != "" {
				src.File = write(t, tt.file)
			}
			_, err := config.Load(src)
			var cerr *config.Error
			if !errors.As(err, &cerr) {
				t.Fatalf("err = %v, want *config.Error", err)
			}
			if cerr.Key != tt.wantKey || !strings.Contains(cerr.Problem, tt.wantMsg) {
				t.Fatalf("error = %q; want key %q and a problem containing %q", cerr, tt.wantKey, tt.wantMsg)
			}
		})
	}
}

func TestCronDefaultsToUTC(t *testing.T) {
	s, err := config.ParseCron("0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 12, 0, 0, 0, time.FixedZone("X", 5*3600))
	if got := s.Next(from).UTC(); got != time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC) {
		t.Fatalf("next = %s, want 03:00 UTC", got)
	}
	s, err = config.ParseCron("CRON_TZ=Asia/Shanghai 0 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Next(from).UTC(); got != time.Date(2026, 1, 1, 19, 0, 0, 0, time.UTC) {
		t.Fatalf("next = %s, want 19:00 UTC (03:00 Shanghai)", got)
	}
}

func TestPrintMasksSecrets(t *testing.T) {
	c, err := config.Load(config.Source{Environ: []string{
		"MULL_DATABASE_URL=postgres://mull:hunter2@db.internal/mull", "MULL_ADMIN_TOKEN=s3cret",
	}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Print()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "hunter2") || strings.Contains(out, "s3cret") {
		t.Fatalf("secret leaked:\n%s", out)
	}
	if !strings.Contains(out, "mull:xxxxx@db.internal") || !strings.Contains(out, `admin_token = "xxxxx"`) {
		t.Fatalf("masked values missing:\n%s", out)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"720h": 720 * time.Hour, "30d": 30 * 24 * time.Hour, "90s": 90 * time.Second} {
		if got, err := config.ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := config.ParseDuration("3 days"); err == nil {
		t.Error("ParseDuration accepted \"3 days\"")
	}
}

// The retros answer in at most the seed's 3000 tokens unless configured;
// other kinds take the default's 4000.
func TestRetroMaxTokensDefault(t *testing.T) {
	c, err := config.Load(config.Source{})
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]int{"retro_session": 3000, "retro_error": 3000, "consolidate_merge": 4000} {
		if got := c.LLM.ForKind(kind).MaxTokens; got != want {
			t.Errorf("%s max_tokens = %d, want %d", kind, got, want)
		}
	}
	c, err = config.Load(config.Source{File: write(t, "[llm.kinds.retro_session]\nmax_tokens = 5000\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LLM.ForKind("retro_session").MaxTokens; got != 5000 {
		t.Errorf("configured retro_session max_tokens = %d, want 5000", got)
	}
	// A default someone set caps the retros too.
	c, err = config.Load(config.Source{File: write(t, "[llm.default]\nmax_tokens = 2000\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LLM.ForKind("retro_error").MaxTokens; got != 2000 {
		t.Errorf("retro_error max_tokens under a default of 2000 = %d", got)
	}
}
