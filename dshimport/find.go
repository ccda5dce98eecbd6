package dshimport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Log file names DSH writes: compressed (the default) and with
// compression: none.
const (
	zstdName  = "session.jsonl.zstd"
	plainName = "session.jsonl"
)

// FindLogs lists the session logs under home/sessions, at any depth
// (subagent sessions nest), in lexical order. A directory it cannot read is
// returned as a FileError, not an error: the rest is still listed.
func FindLogs(home string) ([]string, []FileError, error) {
	root := filepath.Join(home, "sessions")
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("dshimport: no DSH sessions directory at %s (is the DSH home right? set --dsh-home, DSH_HOME or dsh.home)", root)
		}
		return nil, nil, fmt.Errorf("dshimport: %w", err)
	}
	var paths []string
	var errs []FileError
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, FileError{Path: path, Error: err.Error()})
			if d != nil && d.IsDir() && path != root {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() && (d.Name() == zstdName || d.Name() == plainName) {
			paths = append(paths, path)
		}
		return nil
	})
	return paths, errs, err
}

// statFile stats a log, which must be a regular file.
func statFile(path string) (fs.FileInfo, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return info, nil
}
