package memory_test

import (
	"testing"
	"time"

	"github.com/mullhq/mull/learn/memory"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func daysAgo(d float64) time.Time { return now.Add(-time.Duration(d * 24 * float64(time.Hour))) }

func TestScore(t *testing.T) {
	tests := []struct {
		name string
		m    memory.Memory
		want float64
	}{
		// The brief's example: 7 + recency 4 + min(3,5)×0.5.
		{"lesson imp 7, 2 days, 3 uses", memory.Memory{Kind: memory.Lesson, Importance: 7, Origin: memory.OriginTool, RecordedAt: daysAgo(2), Uses: 3}, 7 + 4 + 1.5},
		{"lesson kind default is 7", memory.Memory{Kind: memory.Lesson, Origin: memory.OriginTool, RecordedAt: daysAgo(2), Uses: 3}, 12.5},
		{"preference default 8, fresh", memory.Memory{Kind: memory.Preference, Origin: memory.OriginTool, RecordedAt: daysAgo(0.5)}, 8 + 5},
		{"method default 6", memory.Memory{Kind: memory.Method, Origin: memory.OriginTool, RecordedAt: daysAgo(10)}, 6 + 3},
		{"resource default 5", memory.Memory{Kind: memory.Resource, Origin: memory.OriginTool, RecordedAt: daysAgo(100)}, 5 + 2},
		{"fact default 5, a year old", memory.Memory{Kind: memory.Fact, Origin: memory.OriginTool, RecordedAt: daysAgo(365)}, 5 + 1},
		{"uses count up to 5", memory.Memory{Kind: memory.Fact, Importance: 6, Origin: memory.OriginTool, RecordedAt: daysAgo(2), Uses: 9}, 6 + 4 + 2.5},
		{"unknown time scores recency 1", memory.Memory{Kind: memory.Fact, Importance: 6, Origin: memory.OriginTool}, 6 + 1},
		// The untrusted cap.
		{"src web capped", memory.Memory{Kind: memory.Fact, Importance: 9, Src: memory.SrcWeb, Origin: memory.OriginTool, RecordedAt: daysAgo(2)}, 5 + 4},
		{"src tool capped", memory.Memory{Kind: memory.Fact, Importance: 9, Src: memory.SrcTool, Origin: memory.OriginTool, RecordedAt: daysAgo(2)}, 5 + 4},
		{"src doc capped", memory.Memory{Kind: memory.Fact, Importance: 9, Src: memory.SrcDoc, Origin: memory.OriginTool, RecordedAt: daysAgo(2)}, 5 + 4},
		{"origin retro capped", memory.Memory{Kind: memory.Lesson, Importance: 9, Origin: memory.OriginRetro, RecordedAt: daysAgo(2)}, 5 + 4},
		{"origin sleep capped", memory.Memory{Kind: memory.Principle, Importance: 8, Origin: memory.OriginSleep, RecordedAt: daysAgo(2)}, 5 + 4},
		{"origin import capped", memory.Memory{Kind: memory.Fact, Importance: 8, Origin: memory.OriginImport, RecordedAt: daysAgo(2)}, 5 + 4},
		{"retro with src user is trusted", memory.Memory{Kind: memory.Preference, Importance: 9, Src: memory.SrcUser, Origin: memory.OriginRetro, RecordedAt: daysAgo(2)}, 9 + 4},
		{"a rejection's lesson (command, src user) is trusted", memory.Memory{Kind: memory.Lesson, Importance: 9, Src: memory.SrcUser, Origin: memory.OriginCommand, RecordedAt: daysAgo(2)}, 9 + 4},
		{"external src beats a trusted origin", memory.Memory{Kind: memory.Fact, Importance: 9, Src: memory.SrcWeb, Origin: memory.OriginPanel, RecordedAt: daysAgo(2)}, 5 + 4},
		{"cap keeps a lower importance", memory.Memory{Kind: memory.Fact, Importance: 3, Origin: memory.OriginRetro, RecordedAt: daysAgo(2)}, 3 + 4},
		// The stale cap: a credential (TTL 30) last verified 40 days ago.
		{"stale capped", memory.Memory{Kind: memory.Fact, Importance: 9, Text: "the API key for X lives in vault", Origin: memory.OriginTool, RecordedAt: daysAgo(40)}, 5 + 2},
		{"verified since, not stale", memory.Memory{Kind: memory.Fact, Importance: 9, Text: "the API key for X lives in vault", Origin: memory.OriginTool, RecordedAt: daysAgo(40), VerifiedAt: daysAgo(10)}, 9 + 2},
		{"never stale", memory.Memory{Kind: memory.Fact, Importance: 9, Text: "the API key for X lives in vault", TTLDays: memory.NeverStale, Origin: memory.OriginTool, RecordedAt: daysAgo(40)}, 9 + 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := memory.Score(tt.m, now); got != tt.want {
				t.Fatalf("Score = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRecencyBuckets(t *testing.T) {
	tests := []struct {
		age  time.Duration
		want int
	}{
		{-time.Hour, 5}, // a clock a little ahead still counts as fresh
		{0, 5},
		{24*time.Hour - time.Second, 5},
		{24 * time.Hour, 4},
		{7*24*time.Hour - time.Second, 4},
		{7 * 24 * time.Hour, 3},
		{30*24*time.Hour - time.Second, 3},
		{30 * 24 * time.Hour, 2},
		{180*24*time.Hour - time.Second, 2},
		{180 * 24 * time.Hour, 1},
		{1000 * 24 * time.Hour, 1},
	}
	for _, tt := range tests {
		if got := memory.Recency(now.Add(-tt.age), now); got != tt.want {
			t.Errorf("Recency(age %v) = %d, want %d", tt.age, got, tt.want)
		}
	}
	if got := memory.Recency(time.Time{}, now); got != 1 {
		t.Errorf("Recency(zero) = %d, want 1", got)
	}
}

func TestVolatility(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		// The seed's volatility.mjs examples.
		{"云端 API key 已配置好", 30},
		{"服务端点是 https://x.example.com", 90},
		{"用这个平台管理订阅", 180},
		{"用户偏好先写方案再改代码", 180},
		// Each rule's words.
		{"GitHub token rotates monthly", 30},
		{"数据库密码在 1Password 里", 30},
		{"the base URL is https://api.deepseek.com", 90},
		{"model: deepseek-v4-flash", 90},
		{"daily quota is 400k tokens", 30}, // "token" is the first rule's
		{"daily quota is 400k", 90},
		{"价格是每百万 2 元", 90},
		{"docs at https://example.com/guide", 180},
		{"run go test ./... before committing", 180},
	}
	for _, tt := range tests {
		if got := memory.Volatility(tt.text); got != tt.want {
			t.Errorf("Volatility(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestStale(t *testing.T) {
	tests := []struct {
		name string
		m    memory.Memory
		want bool
	}{
		// The seed's isStaleEntry cases.
		{"ttl 30, verified 200 days ago", memory.Memory{TTLDays: 30, RecordedAt: daysAgo(200), VerifiedAt: daysAgo(200)}, true},
		{"ttl 30, verified a day ago", memory.Memory{TTLDays: 30, RecordedAt: daysAgo(1), VerifiedAt: daysAgo(1)}, false},
		{"ttl 30, no verification: recorded time counts", memory.Memory{TTLDays: 30, RecordedAt: daysAgo(200)}, true},
		{"exactly at the ttl is not past it", memory.Memory{TTLDays: 30, RecordedAt: daysAgo(30)}, false},
		{"ttl from the text (endpoint: 90)", memory.Memory{Text: "endpoint moved to /v2", RecordedAt: daysAgo(100)}, true},
		{"ttl from the text (default 180)", memory.Memory{Text: "prefers short answers", RecordedAt: daysAgo(100)}, false},
		{"never stale", memory.Memory{TTLDays: memory.NeverStale, Text: "token", RecordedAt: daysAgo(1000)}, false},
		{"no time at all", memory.Memory{TTLDays: 30}, false},
	}
	for _, tt := range tests {
		if got := memory.Stale(tt.m, now); got != tt.want {
			t.Errorf("%s: Stale = %v, want %v", tt.name, got, tt.want)
		}
	}
}
