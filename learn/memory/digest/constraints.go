package digest

import (
	"strconv"
	"strings"
	"time"

	"github.com/mullhq/mull/learn/ledger"
	"github.com/mullhq/mull/learn/trust"
)

// constraintLines renders one negative ledger fact as a Known failures
// item: "- <claim>" (and the command's preview), "  why: <evidence>",
// "  retry: <when>". Every field passes the render-time gate and has its
// braces escaped; ok is false when the gate refuses one, and the fact is
// hidden. A stand-in for ledger.ConstraintLines until learn/ledger has it.
func constraintLines(f ledger.Fact, at time.Time) ([]string, bool) {
	claim, ok := gated(f.Claim)
	if !ok || claim == "" {
		return nil, false
	}
	first := "- " + claim
	if f.Preview != "" {
		p, ok := gated(f.Preview)
		if !ok {
			return nil, false
		}
		first += ": " + p
	}
	ls := []string{first}
	var why []string
	for _, w := range f.Evidence {
		switch {
		case w.Kind == ledger.WitnessCommandExit && w.ExitCode != nil:
			why = append(why, "exit code "+strconv.Itoa(*w.ExitCode))
		case w.Kind == ledger.WitnessErrorCode && w.Code != "":
			why = append(why, "error "+w.Code)
		}
	}
	if len(why) > 0 {
		l, ok := gated(strings.Join(why, ", "))
		if !ok {
			return nil, false
		}
		ls = append(ls, "  why: "+l)
	}
	return append(ls, "  retry: "+retryWhen(f.Retry, at)), true
}

func retryWhen(c *ledger.RetryCondition, at time.Time) string {
	switch {
	case c == nil:
		return "when its evidence changes"
	case c.Type == ledger.RetryAfter && !c.At.After(at):
		return "allowed since " + c.At.UTC().Format(time.RFC3339)
	case c.Type == ledger.RetryAfter:
		return "at " + c.At.UTC().Format(time.RFC3339)
	case c.Type == ledger.RetryNever:
		return "never"
	case c.Type == ledger.RetryManual:
		return "by a person"
	}
	return "when any of its conditions is met"
}

func gated(s string) (string, bool) {
	if strings.TrimSpace(s) == "" {
		return "", true
	}
	l, ok := trust.Line(s)
	return escape(l), ok
}
