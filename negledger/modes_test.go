package negledger

import (
	"sync/atomic"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/ledger"
)

// With WithModes, a workspace's mode is asked at each use: a change
// applies to its next policy without a new service, and another
// workspace keeps its own.
func TestModesAskedAtUse(t *testing.T) {
	var mode atomic.Value
	mode.Store(config.LedgerWarn)
	s := New(nil, config.Ledger{Mode: config.LedgerOff}, nil).WithModes(func(ws string) string {
		if ws == "/p" {
			return mode.Load().(string)
		}
		return config.LedgerOff
	})
	if got := s.PolicyFor("/p").Mode; got != ledger.Mode(config.LedgerWarn) {
		t.Fatalf("mode %s", got)
	}
	mode.Store(config.LedgerBlock)
	if got := s.PolicyFor("/p").Mode; got != ledger.Mode(config.LedgerBlock) || s.mode("/p") != ledger.Mode(config.LedgerBlock) {
		t.Fatalf("after the change: %s", got)
	}
	if got := s.PolicyFor("/q").Mode; got != ledger.Mode(config.LedgerOff) {
		t.Fatalf("another workspace: %s", got)
	}
}
