package dshlog_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// The real DSH logs every developer and CI has at ../shared (FORMAT.md
// there describes them).
var fixtureHome = filepath.Join("..", "..", "shared", "fixtures", "dsh", "home")

// fixture is one of the four sample sessions.
type fixture struct {
	name    string // the scenario in FORMAT.md
	session string
	dir     string
	file    string
	lines   int // storage rows, header included
}

var fixtures = []fixture{
	{"S1 failing command", "session-618f3e2a-04f1-4c07-ae0d-228954177258", "--home-dev-invoice-utils--", "session.jsonl.zstd", 92},
	{"S2 missing file", "session-84a3435d-c180-4f56-b4b3-055358da3772", "--home-dev-docs-site--", "session.jsonl.zstd", 69},
	{"S3 provider error", "session-408c8942-fb3e-4b5d-b173-6ffaed7af3c2", "--home-dev-weather-cli--", "session.jsonl.zstd", 62},
	{"S4 preference (plain)", "session-293a9768-7a49-469f-a49b-03ee04ee1add", "--home-dev-shop-frontend--", "session.jsonl", 100},
}

func (f fixture) path(t *testing.T) string {
	t.Helper()
	p := filepath.Join(fixtureHome, "sessions", f.dir, f.session, f.file)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture log missing (the repo expects ../shared beside it): %v", err)
	}
	return p
}

// plainBytes is the fixture's JSONL, decompressed with the library's own
// multi-frame decoder.
func (f fixture) plainBytes(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(f.path(t))
	if err != nil {
		t.Fatal(err)
	}
	if f.file == "session.jsonl" {
		return b
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// splitLines splits JSONL into its lines, without newlines.
func splitLines(b []byte) [][]byte {
	return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

// encodeFrames compresses chunks as one zstd frame each, as DSH appends
// one frame per write batch.
func encodeFrames(t *testing.T, chunks ...[]byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var out []byte
	for _, c := range chunks {
		out = enc.EncodeAll(c, out)
	}
	return out
}

func writeFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
