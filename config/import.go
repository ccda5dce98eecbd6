package config

import (
	"cmp"
	"time"
)

// Import configures how DSH's session logs are read (`mull import dsh`,
// `mull serve --watch-dsh`).
type Import struct {
	// Settle: a log that ends in a partial line or zstd frame is waiting
	// (DSH is still writing it) only while its size or modification time
	// changed within this long; after that its import is incomplete (a cut
	// log), and is reported so on every run until the tail parses.
	// Defaults to 10s. Env: MULL_IMPORT_SETTLE.
	Settle Duration `toml:"settle"`
}

func (i Import) withDefaults() Import {
	i.Settle = cmp.Or(i.Settle, Duration(10*time.Second))
	return i
}

func (i Import) validate() error {
	if i.Settle < Duration(time.Second) || i.Settle > Duration(24*time.Hour) {
		return bad("import.settle", "must be between 1s and 24h, got %s", i.Settle)
	}
	return nil
}
