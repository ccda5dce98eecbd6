package dshlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/mullhq/mull/dshlog"
)

// readLines reads a log from a position to the end of its complete data.
func readLines(t *testing.T, path string, at dshlog.Pos) (lines [][]byte, ends []dshlog.Pos, r *dshlog.Reader, err error) {
	t.Helper()
	r, err = dshlog.Open(path, at)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for {
		l, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return lines, ends, r, err
		}
		lines = append(lines, bytes.Clone(l))
		ends = append(ends, r.Pos())
	}
}

func TestZstdFixturesDecodeEveryFrame(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			want := splitLines(f.plainBytes(t))
			got, _, r, err := readLines(t, f.path(t), dshlog.Pos{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != f.lines || !slices2Equal(got, want) || r.Incomplete() {
				t.Fatalf("read %d lines (incomplete %v), want the %d of the whole file", len(got), r.Incomplete(), f.lines)
			}
			size := fileSize(t, f.path(t))
			if r.Pos() != (dshlog.Pos{Offset: size, Line: int64(f.lines)}) {
				t.Errorf("end at %+v, want offset %d", r.Pos(), size)
			}
			if dshlog.IsZstd(f.path(t)) && len(dshlog.FrameEnds(t, f.path(t))) < 10 {
				t.Errorf("fixture has %d frames; DSH writes one per batch", len(dshlog.FrameEnds(t, f.path(t))))
			}
		})
	}
}

// TestZstdEqualsPlain: the plain S4 log, compressed as DSH does (a frame for
// the header, then one per batch, some batches ending mid-line), reads as
// the same lines and maps to the same events as the plain file.
func TestZstdEqualsPlain(t *testing.T) {
	plain := fixtures[3].plainBytes(t)
	first := bytes.IndexByte(plain, '\n') + 1
	chunks := [][]byte{plain[:first]}
	for at := first; at < len(plain); at += 1777 { // batch edges fall anywhere, mid-line too
		chunks = append(chunks, plain[at:min(at+1777, len(plain))])
	}
	path := writeFile(t, "session.jsonl.zstd", encodeFrames(t, chunks...))
	got, _, _, err := readLines(t, path, dshlog.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices2Equal(got, splitLines(plain)) {
		t.Fatalf("%d lines differ from the plain file's %d", len(got), len(splitLines(plain)))
	}
	zevs, _, err := dshlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pevs, _, err := dshlog.ReadFile(fixtures[3].path(t))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(zevs) != fmt.Sprint(pevs) || len(pevs) != 20 { // 12, 6 usage and 2 session_title
		t.Fatalf("zstd gave %d events, plain %d, or they differ", len(zevs), len(pevs))
	}
}

// TestResumeAtEveryLine: reopening at the Pos after any line reads exactly
// the lines after it, for plain logs and for zstd logs (mid-frame too).
func TestResumeAtEveryLine(t *testing.T) {
	for _, f := range []fixture{fixtures[0], fixtures[3]} {
		t.Run(f.name, func(t *testing.T) {
			all, ends, _, err := readLines(t, f.path(t), dshlog.Pos{})
			if err != nil {
				t.Fatal(err)
			}
			midFrame := 0
			for i, at := range ends {
				if at.Skip > 0 {
					midFrame++
				}
				rest, _, _, err := readLines(t, f.path(t), at)
				if err != nil {
					t.Fatalf("resume after line %d at %+v: %v", i+1, at, err)
				}
				if !slices2Equal(rest, all[i+1:]) {
					t.Fatalf("resume after line %d at %+v: %d lines, want %d", i+1, at, len(rest), len(all)-i-1)
				}
			}
			if dshlog.IsZstd(f.path(t)) && midFrame == 0 {
				t.Error("no position fell inside a frame: the skip path went untested")
			}
		})
	}
}

func TestTruncatedPlainStopsBeforeTheHalfLine(t *testing.T) {
	plain := fixtures[3].plainBytes(t)
	lines := splitLines(plain)
	lineStart := len(bytes.Join(lines[:50], []byte("\n"))) + 1 // line 51
	path := writeFile(t, "session.jsonl", plain[:lineStart+40])
	got, _, r, err := readLines(t, path, dshlog.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 || !r.Incomplete() || r.Pos() != (dshlog.Pos{Offset: int64(lineStart), Line: 50}) {
		t.Fatalf("%d lines, incomplete %v, pos %+v; want 50 lines up to byte %d", len(got), r.Incomplete(), r.Pos(), lineStart)
	}
	// Once DSH finishes the line, reading resumes there.
	if err := os.WriteFile(path, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, _, r, err := readLines(t, path, r.Pos())
	if err != nil || len(rest) != len(lines)-50 || r.Incomplete() {
		t.Fatalf("after completion: %d lines, %v", len(rest), err)
	}
}

func TestTruncatedZstdStopsBeforeTheHalfFrame(t *testing.T) {
	f := fixtures[0]
	full, err := os.ReadFile(f.path(t))
	if err != nil {
		t.Fatal(err)
	}
	ends := dshlog.FrameEnds(t, f.path(t))
	plain := f.plainBytes(t)
	for _, k := range []int{1, len(ends) / 2, len(ends) - 1} {
		cutAt := ends[k-1] + (ends[k]-ends[k-1])/2 // inside frame k+1
		t.Run(fmt.Sprintf("in frame %d", k+1), func(t *testing.T) {
			path := writeFile(t, "session.jsonl.zstd", full[:cutAt])
			got, _, r, err := readLines(t, path, dshlog.Pos{})
			if err != nil {
				t.Fatal(err)
			}
			// The complete frames hold whole lines: exactly those are read.
			whole := countLines(t, full[:ends[k-1]])
			if len(got) != whole || !slices2Equal(got, splitLines(plain)[:whole]) || !r.Incomplete() {
				t.Fatalf("%d lines (incomplete %v), want %d", len(got), r.Incomplete(), whole)
			}
			if r.Pos().Offset != ends[k-1] || r.Pos().Skip != 0 {
				t.Fatalf("stopped at %+v, want the start of frame %d at %d", r.Pos(), k+1, ends[k-1])
			}
			if err := os.WriteFile(path, full, 0o600); err != nil {
				t.Fatal(err)
			}
			rest, _, _, err := readLines(t, path, r.Pos())
			if err != nil || !slices2Equal(append(got, rest...), splitLines(plain)) {
				t.Fatalf("after completion: %d more lines, %v", len(rest), err)
			}
		})
	}

	t.Run("complete frames, last line without newline", func(t *testing.T) {
		plain := fixtures[3].plainBytes(t)
		path := writeFile(t, "session.jsonl.zstd", encodeFrames(t, plain[:1000], plain[1000:len(plain)-1]))
		got, _, r, err := readLines(t, path, dshlog.Pos{})
		if err != nil || len(got) != 99 || !r.Incomplete() {
			t.Fatalf("%d lines, incomplete %v, %v; want 99 and incomplete", len(got), r.Incomplete(), err)
		}
	})
}

func TestCorruptLogs(t *testing.T) {
	t.Run("bad JSON line", func(t *testing.T) {
		lines := splitLines(fixtures[3].plainBytes(t))
		lines[39] = []byte(`{"type":"tool/result","seq":`)
		path := writeFile(t, "session.jsonl", append(bytes.Join(lines, []byte("\n")), '\n'))
		evs, pos, err := dshlog.ReadFile(path)
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Line != 40 || pos.Line != 39 {
			t.Fatalf("err %v, pos %+v; want a CorruptError at line 40", err, pos)
		}
		wantOffset := len(bytes.Join(lines[:39], []byte("\n"))) + 1
		msg := err.Error()
		if ce.Offset != int64(wantOffset) || pos.Offset != int64(wantOffset) || !strings.Contains(msg, path+": line 40 (byte ") || !strings.Contains(msg, "bad JSON") {
			t.Fatalf("error %q at %d, pos %+v; want line 40 at byte %d", msg, ce.Offset, pos, wantOffset)
		}
		if len(evs) != 8 { // session_start, 2 user messages, 2 titles, step 1's assistant message, usage and tool result
			t.Errorf("%d events before the bad line, want 8", len(evs))
		}
	})

	t.Run("bad zstd frame", func(t *testing.T) {
		f := fixtures[0]
		full, err := os.ReadFile(f.path(t))
		if err != nil {
			t.Fatal(err)
		}
		ends := dshlog.FrameEnds(t, f.path(t))
		bad := bytes.Clone(full)
		bad[ends[10]-6] ^= 0xff // inside frame 11, which starts at ends[9]
		path := writeFile(t, "session.jsonl.zstd", bad)
		evs, pos, err := dshlog.ReadFile(path)
		var ce *dshlog.CorruptError
		if !errors.As(err, &ce) || ce.Line != 0 || ce.Offset != ends[9] || pos.Offset != ends[9] {
			t.Fatalf("err %v, pos %+v; want a CorruptError for the frame at %d", err, pos, ends[9])
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%s: zstd frame at byte %d:", path, ends[9])) {
			t.Errorf("message %q", err)
		}
		whole, _, _ := dshlog.ReadFile(f.path(t))
		if len(evs) == 0 || len(evs) >= len(whole) {
			t.Errorf("%d events before the bad frame (of %d)", len(evs), len(whole))
		}
	})

	t.Run("garbage between frames", func(t *testing.T) {
		f := fixtures[0]
		full, _ := os.ReadFile(f.path(t))
		ends := dshlog.FrameEnds(t, f.path(t))
		bad := append(append(bytes.Clone(full[:ends[4]]), "not zstd at all, a stray write"...), full[ends[4]:]...)
		path := writeFile(t, "session.jsonl.zstd", bad)
		_, pos, err := dshlog.ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), "not a zstd frame") || pos.Offset != ends[4] {
			t.Fatalf("err %v, pos %+v", err, pos)
		}
	})

	t.Run("not a session log", func(t *testing.T) {
		path := writeFile(t, "session.jsonl", []byte(`{"hello":"world"}`+"\n"))
		_, _, err := dshlog.ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), "line 1 (byte 0): not a DSH session log") {
			t.Fatalf("err %v", err)
		}
	})
}

func slices2Equal(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func countLines(t *testing.T, zstdData []byte) int {
	t.Helper()
	path := writeFile(t, "part.jsonl.zstd", zstdData)
	lines, _, _, err := readLines(t, path, dshlog.Pos{})
	if err != nil {
		t.Fatal(err)
	}
	return len(lines)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}
