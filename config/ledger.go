package config

import (
	"cmp"
	"slices"
	"time"
)

// The ledger modes (ledger.mode): what the negative ledger (seed 003) does
// with a repeat of a refuted path.
const (
	// LedgerOff records and intercepts nothing.
	LedgerOff = "off"
	// LedgerWarn never blocks: a repeat that fails again gets a note.
	LedgerWarn = "warn"
	// LedgerBlock denies a repeat before it runs.
	LedgerBlock = "block"
)

// LedgerModes lists the modes.
var LedgerModes = []string{LedgerOff, LedgerWarn, LedgerBlock}

// Ledger configures the negative ledger (seed 003): facts about what has
// been proven not to work, checked before every tool call.
type Ledger struct {
	// Mode is off, warn or block. Defaults to "warn".
	// Env: MULL_LEDGER_MODE.
	Mode string `toml:"mode"`
	// CommandRetryAfter is how long after a command failed a retry is
	// allowed again (the seed's commandRetryAfterMs): every fact recorded
	// from a failed command gets retry condition after = failure + this.
	// Defaults to 300s. Env: MULL_LEDGER_COMMAND_RETRY_AFTER.
	CommandRetryAfter Duration `toml:"command_retry_after"`
	// LeaseTTL is how long one call may hold a fact's retry lease before
	// the next verify-retry may take it over. Defaults to 60s.
	// Env: MULL_LEDGER_LEASE_TTL.
	LeaseTTL Duration `toml:"lease_ttl"`
	// WarningRepeatAfter is how long a warning for one (session, fact) is
	// not repeated; a deduped repeat still counts as a duplicate failure.
	// 0 disables the dedupe. Defaults to 60s.
	// Env: MULL_LEDGER_WARNING_REPEAT_AFTER.
	WarningRepeatAfter *Duration `toml:"warning_repeat_after" env:"duration"`
	// CommandTools are the tools whose failed runs (exit code not 0) are
	// recorded as command_failed. Defaults to ["bash", "pwsh"].
	CommandTools []string `toml:"command_tools"`
	// ReadTools are the tools whose FS_NOT_FOUND failures are recorded as
	// file_missing. Defaults to ["read"].
	ReadTools []string `toml:"read_tools"`
	// CommandEvidenceMaxAge: a declared dependency's file observation older
	// than this at the call counts as unknown. Defaults to 60s.
	// Env: MULL_LEDGER_COMMAND_EVIDENCE_MAX_AGE.
	CommandEvidenceMaxAge Duration `toml:"command_evidence_max_age"`
	// CommandDependencies declare the files a command depends on: when all
	// were observed before the call, its failure records their state as
	// preconditions, and a later change allows a verify-retry early.
	CommandDependencies []CommandDependency `toml:"command_dependencies"`
	// ClientTimeout bounds each call the DSH plugin makes to the ledger
	// API (handed to it in the policy). Defaults to 250ms.
	// Env: MULL_LEDGER_CLIENT_TIMEOUT.
	ClientTimeout Duration `toml:"client_timeout"`
	// Workspaces override the mode per workspace (DSH cwd), for example
	// [ledger.workspaces."/home/me/project"] mode = "block".
	Workspaces map[string]LedgerWorkspace `toml:"workspaces"`
}

// CommandDependency is one entry of ledger.command_dependencies: tool,
// the whole command text and the effective cwd must match exactly; files
// are DSH's absolute display paths (no globs).
type CommandDependency struct {
	Tool        string   `toml:"tool"`
	CommandLine string   `toml:"command_line"`
	Cwd         string   `toml:"cwd"`
	Files       []string `toml:"files"`
}

// LedgerWorkspace is one workspace's override.
type LedgerWorkspace struct {
	// Mode is off, warn or block.
	Mode string `toml:"mode"`
}

// ModeFor is the mode of a workspace: its override, else Mode.
func (l Ledger) ModeFor(workspace string) string {
	if w, ok := l.Workspaces[workspace]; ok && w.Mode != "" {
		return w.Mode
	}
	return cmp.Or(l.Mode, LedgerWarn)
}

// WarningRepeat is ledger.warning_repeat_after (unset: 60s; 0 disables).
func (l Ledger) WarningRepeat() time.Duration {
	if l.WarningRepeatAfter == nil {
		return 60 * time.Second
	}
	return l.WarningRepeatAfter.D()
}

func (l Ledger) withDefaults() Ledger {
	l.Mode = cmp.Or(l.Mode, LedgerWarn)
	l.CommandRetryAfter = cmp.Or(l.CommandRetryAfter, Duration(300*time.Second))
	l.LeaseTTL = cmp.Or(l.LeaseTTL, Duration(60*time.Second))
	if l.WarningRepeatAfter == nil {
		d := Duration(60 * time.Second)
		l.WarningRepeatAfter = &d
	}
	if l.CommandTools == nil {
		l.CommandTools = []string{"bash", "pwsh"}
	}
	if l.ReadTools == nil {
		l.ReadTools = []string{"read"}
	}
	l.CommandEvidenceMaxAge = cmp.Or(l.CommandEvidenceMaxAge, Duration(60*time.Second))
	l.ClientTimeout = cmp.Or(l.ClientTimeout, Duration(250*time.Millisecond))
	return l
}

func (l Ledger) validate() error {
	if !slices.Contains(LedgerModes, l.Mode) {
		return bad("ledger.mode", "%q is not one of off, warn, block", l.Mode)
	}
	for ws, w := range l.Workspaces {
		if !slices.Contains(LedgerModes, w.Mode) {
			return bad("ledger.workspaces."+ws+".mode", "%q is not one of off, warn, block", w.Mode)
		}
	}
	if l.CommandRetryAfter.D() < time.Second {
		return bad("ledger.command_retry_after", "must be at least 1s, got %s", l.CommandRetryAfter.D())
	}
	if l.LeaseTTL.D() < time.Second {
		return bad("ledger.lease_ttl", "must be at least 1s, got %s", l.LeaseTTL.D())
	}
	if l.WarningRepeat() < 0 {
		return bad("ledger.warning_repeat_after", "must be 0 (no dedupe) or more, got %s", l.WarningRepeat())
	}
	if l.CommandEvidenceMaxAge.D() < time.Second {
		return bad("ledger.command_evidence_max_age", "must be at least 1s, got %s", l.CommandEvidenceMaxAge.D())
	}
	if t := l.ClientTimeout.D(); t < 10*time.Millisecond || t > 10*time.Second {
		return bad("ledger.client_timeout", "must be between 10ms and 10s, got %s", t)
	}
	for i, d := range l.CommandDependencies {
		if d.Tool == "" || d.CommandLine == "" || d.Cwd == "" || len(d.Files) == 0 {
			return bad("ledger.command_dependencies", "entry %d needs tool, command_line, cwd and at least one file", i+1)
		}
	}
	return nil
}
