// Package llmtest gives tests an llm client that calls a fake DeepSeek
// (llm/fakeds) over real HTTP, with a budget ledger on the test's store, so
// a job test exercises the client's transport, budget and call records as
// production does and fakes only the model.
package llmtest

import (
	"cmp"
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mullhq/mull/budget"
	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/engine/enginetest"
	"github.com/mullhq/mull/llm"
	"github.com/mullhq/mull/llm/fakeds"
	"github.com/mullhq/mull/store"
)

// Options configure New. Every zero field has a default.
type Options struct {
	// Fake configures the fake DeepSeek: its Script above all. Its
	// KeepAliveEvery defaults to 5ms rather than fakeds' 1s, so a held call
	// writes keep-alive lines within a test's time.
	Fake fakeds.Options
	// CallTimeout is each call's deadline. Defaults to 5s: long enough for a
	// loaded race-detector run, short enough that a hang fails the test.
	CallTimeout time.Duration
	// MaxTokens caps each completion. Defaults to 4000, the production
	// default.
	MaxTokens int
	// Edit, when set, changes the config after the fields above are applied
	// and before the ledger and client are built from it: budget limits,
	// queues, anything else a test needs.
	Edit func(*config.Config)
}

// Env is a fake DeepSeek and the clients that reach it.
type Env struct {
	// Fake is the fake DeepSeek, to script further or read its requests.
	Fake *fakeds.Server
	// URL is the fake's base URL, as Config.LLM.BaseURL holds it.
	URL string
	// Config is enginetest.Config with the LLM pointed at the fake and
	// Options applied: build engine clients from it too.
	Config config.Config
	// Ledger is the budget ledger on the test's store, its limits synced.
	Ledger *budget.Ledger
	// LLM calls the fake, reserving and settling with Ledger and
	// recording its calls in the store.
	LLM *llm.Client
}

// New starts a fake DeepSeek behind httptest and builds a ledger and an llm
// client on s for it; the fake and its server are closed when t ends.
func New(t testing.TB, s *store.Store, o Options) *Env {
	t.Helper()
	o.Fake.KeepAliveEvery = cmp.Or(o.Fake.KeepAliveEvery, 5*time.Millisecond)
	fake := fakeds.New(o.Fake)
	srv := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); srv.Close() })

	cfg := enginetest.Config()
	cfg.LLM.BaseURL, cfg.LLM.APIKey = srv.URL, "sk-test"
	cfg.LLM.CallTimeout = config.Duration(cmp.Or(o.CallTimeout, 5*time.Second))
	cfg.LLM.Default.MaxTokens = cmp.Or(o.MaxTokens, 4000)
	if o.Edit != nil {
		o.Edit(&cfg)
	}
	ledger, err := budget.New(s, cfg.Budget)
	if err != nil {
		t.Fatalf("llmtest: budget ledger: %v", err)
	}
	if err := ledger.SyncConfig(context.Background()); err != nil {
		t.Fatalf("llmtest: sync budget limits: %v", err)
	}
	c := llm.New(llm.Options{Config: cfg.LLM, Ledger: ledger, Calls: s, Logger: enginetest.Logger()})
	return &Env{Fake: fake, URL: srv.URL, Config: cfg, Ledger: ledger, LLM: c}
}
