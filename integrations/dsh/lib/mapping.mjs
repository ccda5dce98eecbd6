// Pure mapping from DSH session events to mull events (the JSON that
// POST /v1/events takes). No I/O here, so every rule is testable alone.
//
// Every payload carries only the fields mull's schema names: mull rejects
// unknown payload fields, so absent values are left out, never sent as null.

import { createHash } from 'node:crypto'

import { failureDetail } from './usage.mjs'

/** mull's cap on a tool result's output (events.MaxOutput). */
export const MAX_OUTPUT = 8192
/** mull's cap on a message or error text (events.MaxText). */
export const MAX_TEXT = 64 * 1024
/** mull's cap on a feedback text (events.MaxSummary). */
export const MAX_SUMMARY = 8192
/** mull's cap on an assistant message's reasoning (events.MaxReasoning). */
export const MAX_REASONING = 8192

/**
 * The id of the event derived from one DSH session-log row. The importer
 * (`mull import dsh`) derives the same id from the same row, so an event the
 * plugin pushed live and the same row imported later meet as one.
 */
export function dshId (sessionId, seq, suffix = '') {
  return `dsh:${sessionId}:${seq}${suffix ? ':' + suffix : ''}`
}

/**
 * The id of an event that has no log row (an agent/error no turn/end
 * records): stable over its inputs, so a resend of the same fact is a
 * duplicate.
 */
export function stableId (sessionId, kind, ...parts) {
  const h = createHash('sha256').update(parts.map(String).join('\u0000')).digest('hex').slice(0, 16)
  return `dsh:${sessionId}:${kind}:${h}`
}

/** The id of a session's session_start event; one per session. */
export function sessionStartId (sessionId) {
  return `dsh:${sessionId}:session_start`
}

/**
 * The id of a session's session_end event; one per session. DSH logs have
 * no end row, so the importer never derives one: only the plugin sends it.
 */
export function sessionEndId (sessionId) {
  return `dsh:${sessionId}:session_end`
}

/** One mull event. */
export function mullEvent (id, type, sessionId, workspace, timeMs, payload) {
  return { id, type, session_id: sessionId, workspace, time: isoTime(timeMs), payload: compact(payload) }
}

function isoTime (ms) {
  const d = new Date(Number.isFinite(ms) ? ms : Date.now())
  return Number.isNaN(d.getTime()) ? new Date().toISOString() : d.toISOString()
}

/** Drops undefined and null fields, so no empty field reaches mull. */
export function compact (obj) {
  const out = {}
  for (const [k, v] of Object.entries(obj ?? {})) if (v !== undefined && v !== null) out[k] = v
  return out
}

/** The longest prefix of s that fits max UTF-8 bytes, never splitting a character. */
export function cutBytes (s, max) {
  const b = Buffer.from(s, 'utf8')
  if (b.length <= max) return s
  let end = max
  while (end > 0 && (b[end] & 0xc0) === 0x80) end--
  return b.subarray(0, end).toString('utf8')
}

/**
 * s cut to max UTF-8 bytes, keeping a quarter for its head and the rest for
 * its tail (a failing command's error is usually at the end), with a note of
 * what was cut: the same cut as the importer's (dshlog/cut.go), so a pushed
 * event and its imported twin carry the same text.
 */
export function cutMiddle (s, max) {
  const b = Buffer.from(s, 'utf8')
  if (b.length <= max) return s
  const marker = n => `\n…[${n} bytes cut]…\n`
  const room = max - Buffer.byteLength(marker(b.length))
  if (room < 0) return ''
  let head = Math.floor(room / 4)
  while (head > 0 && (b[head] & 0xc0) === 0x80) head--
  let tail = b.length - (room - head)
  while (tail < b.length && (b[tail] & 0xc0) === 0x80) tail++
  return b.subarray(0, head).toString('utf8') + marker(tail - head) + b.subarray(tail).toString('utf8')
}

/** The N of bash's trailing `[exit code: N]` marker, or undefined. */
export function parseExitCode (text) {
  const m = /\[exit code: (-?\d+)\]\s*$/.exec(text ?? '')
  return m ? Number(m[1]) : undefined
}

/**
 * The non-blank blocks of one type ('text', or 'reasoning') of a content
 * list, joined by newlines, as the importer joins them.
 */
export function contentText (content, type = 'text') {
  if (!Array.isArray(content)) return type === 'text' && typeof content === 'string' ? content : ''
  return content.filter(b => b?.type === type && typeof b.text === 'string' && b.text.trim()).map(b => b.text).join('\n')
}

/** DSH's turn/end reason kind as mull's turn_end reason. */
export function turnReason (kind) {
  switch (kind) {
    case 'completed': case 'error': case 'aborted': case 'max-tokens': return kind
    default: return 'aborted' // 'disposed' and kinds added later: the turn did not complete
  }
}

/**
 * The rating of DSH's feedback/record (its /feedback command): free text
 * that DSH records without a rating, so "none", never a guess from its
 * words. A rating DSH may add later is kept. The 👍/👎 on a message come
 * through message-feedback instead (messageFeedbackEvents).
 */
export function feedbackRating (text, rating) {
  return rating === 'up' || rating === 'down' ? rating : 'none'
}

/** The id of the event for one revision of one message's feedback (the importer's dshlog.FeedbackID). */
export function feedbackId (sessionId, messageId, version) {
  return `dsh:${sessionId}:feedback:${messageId}:${version}`
}

/**
 * The feedback events for one session's message-feedback row, as DSH's
 * storage domain "message_feedback" (table "sessions", keyed by session
 * id) holds it and emits it in domain/changed: {session: {createdAt, cwd},
 * items: [{messageId, rating: 'positive'|'negative', note?, version,
 * createdAt, updatedAt}]}. One event per item revision, with the id the
 * importer derives from the same item; items of another shape are left out.
 */
export function messageFeedbackEvents (sessionId, workspace, row) {
  const out = []
  for (const it of Array.isArray(row?.items) ? row.items : []) {
    const rating = { negative: 'down', positive: 'up' }[it?.rating]
    if (!rating || typeof it.messageId !== 'string' || !it.messageId || typeof it.version !== 'string' || !it.version) continue
    const note = typeof it.note === 'string' ? it.note.trim() : ''
    const at = Math.max(Number(it.updatedAt) || 0, Number(it.createdAt) || 0)
    out.push(mullEvent(feedbackId(sessionId, it.messageId, it.version), 'feedback', sessionId, workspace, at || undefined, {
      rating, text: note ? cutMiddle(note, MAX_SUMMARY) : undefined, message_id: it.messageId
    }))
  }
  return out.sort((a, b) => a.time < b.time ? -1 : a.time > b.time ? 1 : 0)
}

/**
 * The tool_result payload for a tool/result row. call is the matching
 * tool/call's {name, arguments}, when seen.
 */
export function toolResultPayload (data, call) {
  const block = data?.message?.content?.[0] ?? {}
  const text = contentText(block.content)
  const tool = call?.name || 'unknown'
  let command
  if (call) {
    command = tool === 'bash' ? bashCommand(call.arguments) : call.arguments
    if (typeof command === 'string') command = cutMiddle(command, MAX_TEXT)
    else command = undefined
  }
  let exitCode = parseExitCode(text)
  if (exitCode === undefined && tool === 'bash' && block.isError !== true) exitCode = 0 // a bash run that exits 0 has no marker
  const isError = block.isError === true || (exitCode !== undefined && exitCode !== 0)
  return compact({
    call_id: data?.message?.source?.callId ?? block.toolCallId,
    tool,
    command: command || undefined,
    exit_code: exitCode,
    is_error: isError,
    error_code: typeof data?.error?.code === 'string' && data.error.code ? data.error.code : undefined,
    output: text ? cutMiddle(text, MAX_OUTPUT) : undefined,
    turn: positive(data?.turn)
  })
}

function bashCommand (args) {
  try {
    const parsed = JSON.parse(args)
    return typeof parsed?.command === 'string' ? parsed.command : args
  } catch {
    return args
  }
}

/** The message of an error value of any shape. */
export function errorMessage (error) {
  if (error == null) return 'unknown error'
  if (typeof error === 'string') return error
  if (typeof error.message === 'string' && error.message) return error.message
  try { return JSON.stringify(error) } catch { return String(error) }
}

/** A typed error code (HarnessError code, LlmFailure code), if any. */
export function errorCode (error) {
  const code = error?.code ?? error?.failure?.code
  return typeof code === 'string' && code ? code : undefined
}

/**
 * The mull events for one DSH session event, or [] for the rows mull does
 * not take. s is the session's state: {id, workspace, turn, callOf(callId)}.
 * The rules and ids are the importer's (dshlog/doc.go), row for row.
 */
export function mapSessionEvent (s, event, { forwardMessages = true } = {}) {
  const data = event?.data
  const seq = event?.seq
  if (!Number.isInteger(seq) || data == null) return []
  const at = event.time
  const ev = (type, payload, suffix = '') => mullEvent(dshId(s.id, seq, suffix), type, s.id, s.workspace, at, payload)
  switch (event.type) {
    case 'turn/end':
      return turnEnd(data, ev)
    case 'compaction/end':
      return data.error ? [] : [ev('compaction_end', {})]
    case 'tool/result':
      return [ev('tool_result', toolResultPayload(data, s.callOf(data.message?.source?.callId ?? data.message?.content?.[0]?.toolCallId)))]
    case 'feedback/record': {
      const text = typeof data.text === 'string' ? data.text.trim() : ''
      return [ev('feedback', { rating: feedbackRating(text, data.rating), text: text ? cutMiddle(text, MAX_SUMMARY) : undefined })]
    }
    case 'user/message': {
      // The human's prompt and harness-written context (source "plugin"), but
      // not "recall" messages: those are mull's own notices coming back.
      const kind = data.source?.kind
      if (!forwardMessages || (kind !== 'user' && kind !== 'plugin') || data.source?.form === 'recall') return []
      const text = contentText(data.content)
      return text ? [ev('user_message', { text: cutMiddle(text, MAX_TEXT), source: kind, turn: positive(s.turn) })] : []
    }
    case 'assistant/message': {
      if (!forwardMessages) return []
      // The text blocks, and the reasoning blocks cut as the importer cuts
      // them (head and, larger, tail: where the agent decides). A step of
      // reasoning and tool calls gives reasoning and an empty text, as the
      // import does; one of tool calls only gives nothing.
      const text = contentText(data.message?.content)
      const reasoning = contentText(data.message?.content, 'reasoning')
      const id = typeof data.message?.id === 'string' && data.message.id ? data.message.id : undefined
      if (!text && !reasoning) return []
      return [ev('assistant_message', {
        text: cutMiddle(text, MAX_TEXT), turn: positive(data.turn), message_id: id, reasoning: reasoning ? cutMiddle(reasoning, MAX_REASONING) : undefined
      })]
    }
    default:
      return []
  }
}

/**
 * turn_end, plus for a turn that ended in an error the error event that
 * ended it (id suffix "error"). An aborted turn carries its cause as error.
 */
function turnEnd (data, ev) {
  const kind = data.reason?.kind
  const reason = turnReason(kind)
  let error
  if (kind === 'error') error = data.reason?.error?.message
  else if (reason === 'aborted' && data.reason?.reason != null) {
    error = typeof data.reason.reason === 'string' ? data.reason.reason : JSON.stringify(data.reason.reason)
  }
  error = typeof error === 'string' && error ? cutMiddle(error, MAX_TEXT) : undefined
  const out = [ev('turn_end', { turn: nonNegative(data.turn), reason, error })]
  if (reason === 'error') {
    const code = errorCode(data.reason?.error)
    out.push(ev('error', {
      message: error?.trim() ? error : `the turn ended in an error (${code ?? ''})`,
      code,
      ...failureDetail(data.reason?.error),
      turn: positive(data.turn)
    }, 'error'))
  }
  return out
}

function nonNegative (n) {
  return Number.isInteger(n) && n >= 0 ? n : 0
}

function positive (n) {
  return Number.isInteger(n) && n > 0 ? n : undefined
}
