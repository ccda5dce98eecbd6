// Package dshlog reads DeepSeek Harness session logs (session.jsonl, and
// session.jsonl.zstd: concatenated zstd frames) and maps their rows to mull's
// events. It is pure: files in, events out, no database.
//
// # Mapping
//
// Line 1, the header, gives session_start (at createdAt; the header's cwd is
// every event's workspace; delegationDepth > 0 means a subagent, primary
// false). Then, by row type:
//
//   - user/message → user_message, for source kind "user" (the human) and
//     "plugin" (harness-written context), the text blocks joined. Messages
//     of form "recall" are skipped: that is mull's own memory, injected by
//     its bridge plugin, and learning from it would feed mull its own output.
//   - assistant/message → assistant_message: the text blocks as its text,
//     the reasoning blocks as its reasoning, cut to events.MaxReasoning
//     keeping a quarter for the head and the rest for the tail, where the
//     reasoning arrives at what the agent decided (the cut tool output gets
//     too, so the plugin cuts both alike). A step of reasoning and tool calls
//     gives a message with reasoning and no text; a message of tool calls
//     only gives nothing.
//   - tool/call is remembered by callId until its tool/result, which gives
//     tool_result: the tool's name; bash's command, or the call's arguments
//     (JSON) for other tools; the exit code from a trailing "[exit code: N]"
//     (bash without the marker exited 0); is_error = isError or N ≠ 0;
//     error_code from data.error.code; the output cut to events.MaxOutput,
//     keeping its head and its tail, where failures show.
//   - turn/end → turn_end with its reason (completed, error, aborted,
//     max-tokens; an unknown kind counts as aborted) and error message.
//   - turn/end with reason error → also error, the agent or provider failure
//     that ended the turn (message and code, and the provider's HTTP status
//     and request id when DSH has them). llm/retry rows and error
//     finish chunks are attempts DSH retries: they are not agent errors, and
//     when the retries run out the turn/end says so.
//   - compaction/end → compaction_end, unless the compaction failed.
//   - assistant/message.data.usage → usage (model and provider from the
//     message's source), one per step: DSH writes the same usage on the
//     step's usage chunk too, which is skipped, since only the message names
//     the model. inputTokens are the prompt's cache misses, cacheReadTokens
//     its hits.
//   - session/title → session_title (DSH writes a "fallback" title cut from
//     the prompt first, then the model's).
//   - feedback/record → feedback of rating "none": DSH's /feedback records
//     free text without a rating, and no rating is guessed from its words.
//   - The 👍/👎 on one assistant message (DSH's message-feedback, web
//     profile) are not in the log: DSH keeps them in
//     <home>/storages/message_feedback.json, which ReadMessageFeedback
//     reads, one feedback event per item revision (rating up or down, the
//     note, message_id naming the assistant message).
//
// The header's parentSession (a subagent child, or a fork) becomes
// session_start's parent, so the parent's retro can read its failures;
// the first seedLength rows of such a log are the parent's history it
// inherited, mapped from the parent's own log, and are skipped.
// assistant_message carries DSH's message id, which per-message feedback
// names.
//
// Every other row type is ignored (turn/start only moves the turn count).
// No session_end: DSH logs have no end record. The bridge plugin sends one
// when DSH disposes it (DSH exits); for imported sessions the ingest side
// ends those that go idle.
//
// # Event ids
//
// An event's id is events.DSHID(session, seq of its row, ""), the id the
// bridge plugin (integrations/dsh, dshId) gives the event it pushes for that
// row, so a pushed event and its imported twin are stored once. The
// exceptions: session_start, from the header that has no seq, is
// "dsh:<session>:session_start" (the plugin's sessionStartId); the error
// event beside a turn/end is DSHID(session, seq of the turn/end, "error");
// the usage event beside an assistant_message is DSHID(session, seq of the
// message, "usage"); per-message feedback, which has no row, is
// "dsh:<session>:feedback:<message id>:<version>" (FeedbackID, the
// plugin's feedbackId).
package dshlog
