package budget

import (
	"context"
	"strings"
	"time"
)

// KeyState is one key's report for today, for a workspace or a job kind
// that may have none of its own: a workspace without a row of its own
// takes the workspace:* default (LimitKey says so), and a key nobody used
// reads zero.
func (l *Ledger) KeyState(ctx context.Context, key string) (KeyReport, time.Time, error) {
	rep, err := l.ReportDay(ctx, "")
	if err != nil {
		return KeyReport{}, time.Time{}, err
	}
	return l.withOwnBudget(stateOf(rep, key)), rep.ResetAt, nil
}

// withOwnBudget puts a workspace key's own token budget (the workspace's
// budget setting, WithWorkspaceBudget), when it has one, in place of the
// token limit the report read, as Reserve does: what a report or a status
// says is what the next reservation will be held to.
func (l *Ledger) withOwnBudget(k KeyReport) KeyReport {
	ws, ok := strings.CutPrefix(k.Key, workspacePrefix)
	if l.workspace == nil || !ok || ws == "" {
		return k
	}
	tokens, ok := l.workspace(ws)
	if !ok {
		return k
	}
	k.LimitTokens, k.LimitKey, k.Source, k.RemainingTokens = tokens, "", "workspace", -1
	if tokens > 0 {
		k.RemainingTokens = max(0, tokens-k.ReservedTokens-k.SpentTokens)
	}
	return k
}

// Exhausted reports the first key of a job's keys (Keys(workspace, kind))
// whose limit today has nothing left, in tokens or in USD: a job of that
// kind would be refused its reservation and snoozed until resetAt. ok is
// false when every key has room.
func (l *Ledger) Exhausted(ctx context.Context, workspace, kind string) (k KeyReport, resetAt time.Time, ok bool, err error) {
	rep, err := l.ReportDay(ctx, "")
	if err != nil {
		return KeyReport{}, time.Time{}, false, err
	}
	for _, key := range Keys(workspace, kind) {
		k := l.withOwnBudget(stateOf(rep, key))
		spentUSD := k.CostUSD + k.ReservedUSD
		if (k.LimitTokens > 0 && k.RemainingTokens == 0) || (k.LimitUSD > 0 && spentUSD >= k.LimitUSD) {
			return k, rep.ResetAt, true, nil
		}
	}
	return KeyReport{}, rep.ResetAt, false, nil
}

// stateOf is key's row of rep, or the row it would have unused.
func stateOf(rep DayReport, key string) KeyReport {
	var def *KeyReport
	for i, k := range rep.Keys {
		if k.Key == key {
			return k
		}
		if k.Key == KeyDefaultWorkspace {
			def = &rep.Keys[i]
		}
	}
	k := KeyReport{Key: key, Day: rep.Day, RemainingTokens: -1}
	if def != nil && len(key) > len(workspacePrefix) && key[:len(workspacePrefix)] == workspacePrefix {
		k.LimitTokens, k.LimitUSD, k.LimitKey, k.Source = def.LimitTokens, def.LimitUSD, KeyDefaultWorkspace, def.Source
		if k.LimitTokens > 0 {
			k.RemainingTokens = k.LimitTokens
		}
	}
	return k
}
