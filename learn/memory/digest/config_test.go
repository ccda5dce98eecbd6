package digest_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/learn/memory/digest"
)

// learn does not import config; this keeps the mirror honest.
func TestOptionsMirrorConfig(t *testing.T) {
	c := config.Default().Digest
	o := digest.Options{}.WithDefaults()
	if !slices.Equal(digest.Sections, config.DigestSections) {
		t.Errorf("sections %v, config %v", digest.Sections, config.DigestSections)
	}
	if o.Budget != c.Budget || o.Wrapper != c.Wrapper || o.MaxLines != c.MaxLines || !maps.Equal(o.Quotas, c.Quotas) {
		t.Errorf("defaults %+v, config %+v", o, c)
	}
	o = digest.Options{Quotas: map[string]int{"facts": 100, "playbooks": 300}}.WithDefaults()
	if o.Quotas["facts"] != 100 || o.Quotas["playbooks"] != 300 || o.Quotas["lessons"] != 900 {
		t.Errorf("quotas do not merge over the defaults: %v", o.Quotas)
	}
}
