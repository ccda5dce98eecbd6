// Package migrations embeds mull's own numbered SQL migrations, one folder per
// dialect. River's migrations come from rivermigrate and run first.
//
// A file is named NNN_name.sql; NNN is its version. Once released, a file is
// never edited: add a new one.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// Migration is one numbered SQL file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// For returns the migrations of a dialect ("sqlite" or "postgres") in order.
func For(dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations: unknown dialect %q", dialect)
	}
	var out []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migrations: %s/%s is not named NNN_name.sql", dialect, e.Name())
		}
		b, err := files.ReadFile(dialect + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations: %s versions must run 1, 2, 3…; found %d at position %d", dialect, m.Version, i+1)
		}
	}
	return out, nil
}
