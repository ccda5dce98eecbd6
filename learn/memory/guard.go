package memory

import "github.com/mullhq/mull/learn/trust"

// Quarantine reports whether text reads like an instruction to the agent.
// It is trust.Quarantine, kept here for the memory rules' callers.
func Quarantine(text string) (bool, string) { return trust.Quarantine(text) }

// Redact replaces credentials in text; it is trust.Redact.
func Redact(text string) (string, bool) { return trust.Redact(text) }

func redact(text string) (string, int) {
	v := trust.Check(text)
	return v.Text, v.Redacted
}
