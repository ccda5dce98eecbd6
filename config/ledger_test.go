package config_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

// The ledger's defaults are the seed's numbers, each pinned (300s not
// 299s or 301s), and every key settable by env is set by it.
func TestLedgerDefaultsAndEnv(t *testing.T) {
	d := config.Default().Ledger
	if d.Mode != "warn" || d.CommandRetryAfter.D() != 300*time.Second || d.LeaseTTL.D() != 60*time.Second ||
		d.WarningRepeat() != 60*time.Second || d.CommandEvidenceMaxAge.D() != 60*time.Second ||
		d.ClientTimeout.D() != 250*time.Millisecond || !slices.Equal(d.CommandTools, []string{"bash", "pwsh"}) ||
		!slices.Equal(d.ReadTools, []string{"read"}) || d.ModeFor("/any") != "warn" {
		t.Fatalf("defaults: %+v", d)
	}
	if (config.Ledger{}).WarningRepeat() != 60*time.Second {
		t.Fatal("an unset warning_repeat_after must read as 60s")
	}
	file := write(t, "[ledger]\nmode = \"block\"\n[ledger.workspaces.\"/p\"]\nmode = \"off\"\n"+
		"[[ledger.command_dependencies]]\ntool = \"bash\"\ncommand_line = \"npm test\"\ncwd = \"/p\"\nfiles = [\"/p/package.json\"]\n")
	c, err := config.Load(config.Source{File: file, Environ: []string{"MULL_LEDGER_COMMAND_RETRY_AFTER=120s",
		"MULL_LEDGER_LEASE_TTL=30s", "MULL_LEDGER_WARNING_REPEAT_AFTER=0", "MULL_LEDGER_COMMAND_EVIDENCE_MAX_AGE=2m",
		"MULL_LEDGER_CLIENT_TIMEOUT=100ms"}})
	if err != nil {
		t.Fatal(err)
	}
	l := c.Ledger
	if l.ModeFor("/p") != "off" || l.ModeFor("/q") != "block" || l.CommandRetryAfter.D() != 2*time.Minute ||
		l.LeaseTTL.D() != 30*time.Second || l.WarningRepeatAfter == nil || l.WarningRepeat() != 0 ||
		l.CommandEvidenceMaxAge.D() != 2*time.Minute || l.ClientTimeout.D() != 100*time.Millisecond ||
		len(l.CommandDependencies) != 1 || l.CommandDependencies[0].Files[0] != "/p/package.json" {
		t.Fatalf("set: %+v", l)
	}
	c, err = config.Load(config.Source{Environ: []string{"MULL_LEDGER_WARNING_REPEAT_AFTER=90s"}})
	if err != nil || c.Ledger.WarningRepeat() != 90*time.Second {
		t.Fatalf("warning_repeat_after from env: %v, %v", c.Ledger.WarningRepeat(), err)
	}
}

// A bad ledger value is refused at start, naming its key.
func TestLedgerRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		file string
		env  []string
		key  string
	}{
		{env: []string{"MULL_LEDGER_MODE=deny"}, key: "ledger.mode"},
		{file: "[ledger.workspaces.\"/p\"]\nmode = \"strict\"\n", key: "ledger.workspaces./p.mode"},
		{env: []string{"MULL_LEDGER_COMMAND_RETRY_AFTER=500ms"}, key: "ledger.command_retry_after"},
		{env: []string{"MULL_LEDGER_COMMAND_RETRY_AFTER=soon"}, key: "MULL_LEDGER_COMMAND_RETRY_AFTER"},
		{env: []string{"MULL_LEDGER_LEASE_TTL=500ms"}, key: "ledger.lease_ttl"},
		{env: []string{"MULL_LEDGER_WARNING_REPEAT_AFTER=-1s"}, key: "ledger.warning_repeat_after"},
		{env: []string{"MULL_LEDGER_WARNING_REPEAT_AFTER=often"}, key: "MULL_LEDGER_WARNING_REPEAT_AFTER"},
		{env: []string{"MULL_LEDGER_COMMAND_EVIDENCE_MAX_AGE=10ms"}, key: "ledger.command_evidence_max_age"},
		{env: []string{"MULL_LEDGER_CLIENT_TIMEOUT=5ms"}, key: "ledger.client_timeout"},
		{env: []string{"MULL_LEDGER_CLIENT_TIMEOUT=11s"}, key: "ledger.client_timeout"},
		{file: "[[ledger.command_dependencies]]\ntool = \"bash\"\ncommand_line = \"npm test\"\ncwd = \"/p\"\n", key: "ledger.command_dependencies"},
	} {
		src := config.Source{Environ: tc.env}
		if tc.file != "" {
			src.File = write(t, tc.file)
		}
		_, err := config.Load(src)
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%v %q: got %v, want an error naming %s", tc.env, tc.file, err, tc.key)
		}
	}
}
