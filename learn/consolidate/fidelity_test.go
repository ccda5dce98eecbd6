package consolidate_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mullhq/mull/learn/consolidate"
	"github.com/mullhq/mull/learn/memory"
)

func TestKeyContent(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"use pnpm not npm in this repo", nil},
		{"postgres listens on port 5433 in dev.", []string{"5433"}},
		{"rerun flaky tests with go test --race -count=1 ./...", []string{"-race", "-count=1", "./..."}},
		{"docs at https://riverqueue.com/docs/ (job API)", []string{"https://riverqueue.com/docs", "API"}},
		{"config lives in /etc/mull/config.toml, see memory.New and retro_session", []string{"/etc/mull/config.toml", "memory.new", "retro_session"}},
		{"PostgreSQL 16, node v20.11.1, go1.26", []string{"postgresql", "16", "v20.11.1", "go1.26"}},
		{"run `make test-pg` before \"git push\"; it's slow", []string{"make test-pg", "git push", "test-pg"}},
		{"the follow-up uses deepseek-v4-flash", []string{"follow-up", "deepseek-v4-flash"}},
		{"端口5433，用 pnpm", []string{"5433"}},
		{"ｐｏｒｔ　５４３３", []string{"5433"}},
		{"set MULL_CONSOLIDATE_CHUNK_CHARS or $HOME, e.g. in .env", []string{"mull_consolidate_chunk_chars", "$home", ".env"}},
		{"Use pnpm, not npm. Really!", nil},
	}
	for _, tt := range tests {
		got := consolidate.KeyContent(tt.in)
		want := tt.want
		for i := range want {
			want[i] = strings.ToLower(want[i])
		}
		if !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Errorf("KeyContent(%q) = %q, want %q", tt.in, got, want)
		}
	}
}

func TestMissing(t *testing.T) {
	tests := []struct {
		name    string
		sources []string
		merged  string
		missing []string // nil: faithful
	}{
		{"planted duplicates", []string{"use pnpm not npm in this repo", "This repo uses pnpm, not npm."},
			"This repo uses pnpm, not npm.", nil},
		{"dropped port", []string{"postgres listens on port 5433 in dev", "in dev postgres runs locally"},
			"in dev, postgres runs locally", []string{"5433", "coverage 0.40 < 0.60 of memory 1"}},
		{"port 5433 is not in 15433", []string{"postgres listens on port 5433 in dev"},
			"postgres listens on port 15433 in dev", []string{"5433"}},
		{"version prefix is not the version", []string{"node v20.11 is required"},
			"node v20.11.1 is required", []string{"v20.11"}},
		{"dropped --race", []string{"flaky test -> shared state -> rerun it with go test --race -count=1",
			"flaky test -> shared state -> rerun it with go test -count=1"},
			"flaky test -> shared state -> rerun it with go test -count=1", []string{"-race"}},
		{"-race kept as --race", []string{"rerun flaky tests with go test -race ./..."},
			"rerun flaky tests with `go test --race ./...`", nil},
		{"everything kept in other words", []string{"postgres listens on port 5433 in dev", "the dev database is postgres 16"},
			"In dev the database is Postgres 16, listening on port 5433.", nil},
		{"path changed", []string{"config lives in /etc/mull/config.toml"},
			"config lives in /etc/mull/", []string{"/etc/mull/config.toml"}},
		{"identifier dropped", []string{"memory.New quarantines instruction-like text"},
			"New quarantines instruction-like text", []string{"memory.new"}},
		{"hyphenated word respelt", []string{"write a follow-up lesson after each retro run"},
			"after each retro run, write a follow up lesson", nil},
		{"quoted string kept", []string{`the error reads "no required module provides package"`},
			`go build says "no required module provides package" outside the module`, nil},
		{"low coverage", []string{"prefer table tests with named cases and subtests for every parser change"},
			"prefer table tests", []string{"coverage 0.33 < 0.60 of memory 1"}},
		{"CJK kept", []string{"开发环境端口是5433"}, "开发环境的端口是 5433", nil},
	}
	for _, tt := range tests {
		var ms []memory.Memory
		for i, s := range tt.sources {
			ms = append(ms, mem(int64(i+1), memory.Fact, s))
		}
		if got := consolidate.Missing(tt.merged, ms); !reflect.DeepEqual(got, tt.missing) {
			t.Errorf("%s: Missing(%q) = %q, want %q", tt.name, tt.merged, got, tt.missing)
		}
	}
}
