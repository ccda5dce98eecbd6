package memory

import "github.com/mullhq/mull/learn/trust"

// Quarantine reports whether text reads like an instruction to the agent,
// and why: trust.Check's verdict, kept here for the memory rules' callers.
func Quarantine(text string) (bool, string) {
	v := trust.Check(text)
	return v.Quarantined, v.Reason
}

// Redact replaces credentials in text, by trust.Check.
func Redact(text string) (string, bool) {
	v := trust.Check(text)
	return v.Text, v.Redacted > 0
}
