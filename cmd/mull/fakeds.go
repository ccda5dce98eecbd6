package main

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/mullhq/mull/config"
	"github.com/mullhq/mull/llm/fakeds"
)

func newFakeDeepSeekCmd(g *globals) *cobra.Command {
	var listen, scriptFile, apiKey string
	var cacheUnit, cacheInterval int
	var keepAlive time.Duration
	cmd := &cobra.Command{
		Use:   "fake-deepseek",
		Short: "Serve a fake DeepSeek API for tests and offline demos",
		Long: `Serve a fake DeepSeek chat API on --listen: POST /chat/completions and
/v1/chat/completions, non-streaming and streaming, JSON mode, with usage
whose cache split comes from an emulated prefix cache, by the rules of
DeepSeek's context-caching guide: a request hits the longest persisted
prefix it matches fully, counted in whole --cache-unit tokens; a prefix is
persisted at each request's input end and output end, where a request
shares a prefix with an earlier one (for the requests after it), and every
--cache-interval tokens. Tokens are ceil(bytes/4) per message plus 3. Point
mull at it with MULL_LLM_BASE_URL=http://ADDR. It runs until interrupted.

Without a script it answers every mull prompt type (named by a
"mull-prompt: <type>" line in the system message, else by the job kind of
the X-Mull-Job-Kind header) with schema-valid JSON; reflect_task gets one
new workspace failure lesson for a task that did not succeed, and "none"
for one that did.

To make an agent call a tool, put a call marker "[call:NAME {json args}]" in
its prompt. A request that offers tools and has a user message with one is
answered before any script rule: with one call to tool NAME with those
arguments (finish_reason "tool_calls"), or, once a tool message follows
that user message, with the text "TOOL-RESULT: <that tool message>".
Several markers in the message are called one after another, one per tool
result, and "{{match:REGEXP}}" inside a later marker's JSON strings is
replaced by REGEXP's first match (its first group, if any) in the newest
tool result it matches: [call:task_end {"task_id":"{{match:(task-[0-9a-f-]+)}}"}].
A marker whose tool is not offered, whose arguments are not a JSON object
or whose placeholder matches nothing gets a text saying so. Requests
without a marker are answered as the rest of this help says.

A script (--script FILE, JSON) makes it fail on demand. Rules are tried in
order and the first that matches wins; a rule matches when every field it
gives holds:

  model        the request's model, exactly
  marker       text that appears in any message
  kind         the job kind (X-Mull-Job-Kind header or user_id "mull:<kind>:<id>")
  times        only the first N matching requests (then the rule is skipped)

and answers with either a response or a fault:

  response     {"content": "text" or a JSON value, "finish_reason": "stop",
                "reasoning_content": "...", "usage": {"prompt_tokens": 10, ...}}
               (no content: the default reply)
  fault        429, 500, 503, 402, 400, 401, 422 (that HTTP error, in
               DeepSeek's shape), hang, slow, blank, truncated, invalid_json,
               wrong_schema
  retry_after  seconds, for a 429's Retry-After header
  delay        how long "slow" sends keep-alives before answering ("2s")
  message      the error message of an HTTP fault

  hang: keep-alive lines until the client gives up. slow: keep-alives, then
  the answer. blank: empty content. truncated: cut-off JSON with
  finish_reason "length". invalid_json: text that is not JSON. wrong_schema:
  a JSON object without the expected fields.

Example:

  {"rules": [
    {"kind": "retro_session", "times": 2, "fault": "429", "retry_after": 3},
    {"marker": "FAIL-HERE", "fault": "500"},
    {"model": "deepseek-v4-pro", "fault": "slow", "delay": "2s"},
    {"kind": "llm_probe", "response": {"content": {"ok": true, "echo": "hi"}}}
  ]}

A script with a mistake exits with status 2, naming the rule and the field.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := fakeds.Options{APIKey: apiKey, CacheUnit: cacheUnit, CacheInterval: cacheInterval, KeepAliveEvery: keepAlive}
			if cacheUnit < 1 {
				return usageErr("--cache-unit %d: want at least 1 token", cacheUnit)
			}
			if cacheInterval < 0 {
				opts.CacheInterval = -1 // off
			} else if cacheInterval == 0 || cacheInterval < cacheUnit {
				return usageErr("--cache-interval %d: want at least --cache-unit (%d) tokens, or -1 for none", cacheInterval, cacheUnit)
			}
			if keepAlive <= 0 {
				return usageErr("--keep-alive %s: want a positive duration", keepAlive)
			}
			if scriptFile != "" {
				script, err := fakeds.LoadScript(scriptFile)
				if err != nil {
					return usageErr("script %v", err)
				}
				opts.Script = script
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen: %w", err)
			}
			var cfg config.Config
			cfg.Log.Level, cfg.Log.Format = g.logLevel, g.logFormat
			if cfg.Log.Level == "" {
				cfg.Log.Level = "info"
			}
			if cfg.Log.Format == "" {
				cfg.Log.Format = "auto"
			}
			logger := newLogger(cfg, g.stderr).With("component", "fake_deepseek")
			opts.Logger = logger
			url := "http://" + ln.Addr().String()
			logger.Info("fake DeepSeek listening; set MULL_LLM_BASE_URL to its url", "url", url, "script", scriptFile)
			return fakeds.Serve(cmd.Context(), ln, fakeds.New(opts))
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:7799", "address to serve on (port 0 picks a free one)")
	f.StringVar(&scriptFile, "script", "", "JSON script of responses and faults (see above)")
	f.StringVar(&apiKey, "api-key", "", "require this key as 'Authorization: Bearer KEY' (default: accept any)")
	f.IntVar(&cacheUnit, "cache-unit", 64, "prefix cache storage unit in tokens: cache hits cover whole units")
	f.IntVar(&cacheInterval, "cache-interval", 1024, "tokens between the prefixes the cache persists along a request (-1: none)")
	f.DurationVar(&keepAlive, "keep-alive", time.Second, "time between keep-alive lines while a request is held")
	return cmd
}
