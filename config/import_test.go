package config_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mullhq/mull/config"
)

func TestImportSettle(t *testing.T) {
	c, err := config.Load(config.Source{})
	if err != nil || c.Import.Settle.D() != 10*time.Second {
		t.Fatalf("default settle %s, %v; want 10s", c.Import.Settle, err)
	}
	c, err = config.Load(config.Source{Environ: []string{"MULL_IMPORT_SETTLE=1m"}})
	if err != nil || c.Import.Settle.D() != time.Minute {
		t.Fatalf("MULL_IMPORT_SETTLE=1m: %s, %v", c.Import.Settle, err)
	}
	c, err = config.Load(config.Source{File: write(t, "[import]\nsettle = \"30s\"\n")})
	if err != nil || c.Import.Settle.D() != 30*time.Second {
		t.Fatalf("file settle = 30s: %s, %v", c.Import.Settle, err)
	}
	for _, env := range []string{"MULL_IMPORT_SETTLE=500ms", "MULL_IMPORT_SETTLE=-5s", "MULL_IMPORT_SETTLE=25h"} {
		_, err := config.Load(config.Source{Environ: []string{env}})
		var cerr *config.Error
		if !errors.As(err, &cerr) || cerr.Key != "import.settle" {
			t.Errorf("%s: %v; want an error naming import.settle", env, err)
		}
	}
	if _, err := config.Load(config.Source{Environ: []string{"MULL_IMPORT_SETTLE=soon"}}); err == nil {
		t.Error("MULL_IMPORT_SETTLE=soon was accepted")
	}
}
