package llm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mullhq/mull/config"
)

// A call's record keeps its messages (llm.keep_prompts, 7 days by
// default) so an operator can see what a retro read, with every credential
// redacted: a retro's excerpt quotes tool output as the session had it.
// keep_prompts 0 keeps none.
func TestRecordKeepsRedactedPrompts(t *testing.T) {
	secret := "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
	c, fake, rec := setup(t, nil, nil)
	if _, err := c.Complete(context.Background(), probeCall("$ git push\nfatal: token "+secret+" rejected")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fake.Requests()[0].Body), secret) {
		t.Fatal("the request itself should carry the excerpt as it is")
	}
	got := rec.rows()[0].Messages
	if len(got) != 2 || got[0].Role != "system" || got[1].Role != "user" ||
		!strings.Contains(got[0].Content, "mull-prompt") || got[1].Content != "$ git push\nfatal: token [redacted:ghs] rejected" {
		t.Fatalf("kept messages %+v; want both, the credential redacted", got)
	}

	c, _, rec = setup(t, nil, func(l *config.LLM) { l.KeepPrompts = "0" })
	if _, err := c.Complete(context.Background(), probeCall("hi")); err != nil {
		t.Fatal(err)
	}
	if m := rec.rows()[0].Messages; m != nil {
		t.Fatalf("keep_prompts 0 kept %+v", m)
	}
}
