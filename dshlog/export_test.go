package dshlog

import (
	"bufio"
	"io"
	"os"
	"testing"
)

// FrameEnds lists the file offsets where a zstd log's frames end.
func FrameEnds(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var ends []int64
	var at int64
	for {
		raw, err := readFrame(br, nil)
		if err == io.EOF {
			return ends
		}
		if err != nil {
			t.Fatal(err)
		}
		at += int64(len(raw))
		ends = append(ends, at)
	}
}
