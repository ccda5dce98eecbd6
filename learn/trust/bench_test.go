package trust_test

import (
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/trust"
)

// memory300 is a typical memory: an engineering note with a path, a
// command, a key name and some Chinese.
const memory300 = "CI runs `go test -race ./...` on every push; the Postgres tests need " +
	"MULL_TEST_DATABASE_URL set, and the api key for the fake DeepSeek is read from " +
	"DEEPSEEK_API_KEY. 用户偏好用中文沟通，提交前先跑 make lint。The token budget is " +
	"400k per workspace; see docs/budget.md before changing it."

func BenchmarkCheck(b *testing.B) {
	long := strings.Repeat(memory300+"\n", 3500/len(memory300)+1)[:3500]
	for _, c := range []struct {
		name, text string
	}{{"memory300", memory300}, {"excerpt3500", long}} {
		b.Run(c.name, func(b *testing.B) {
			trust.Check(c.text) // compile the rules outside the timing
			b.ReportAllocs()
			for b.Loop() {
				trust.Check(c.text)
			}
		})
	}
	b.Run("Line300", func(b *testing.B) {
		for b.Loop() {
			trust.Line(memory300)
		}
	})
}
