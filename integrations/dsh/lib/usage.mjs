// The agent's own token usage, the provider failure's details and the
// session title: what mull needs to say what its learning costs next to
// the work it learns from. Pure, like mapping.mjs; the rules and ids are
// the importer's (dshlog/usage.go), row for row.

import { cutMiddle, dshId, mullEvent } from './mapping.mjs'

/** mull's caps (events.MaxTokens, MaxName, MaxIDLen, MaxTitle). */
const MAX_TOKENS = 2 ** 40
const MAX_NAME = 128
const MAX_ID = 256
const MAX_TITLE = 512

/**
 * The usage event of an assistant/message row, or [] for any other row.
 * DSH writes a step's usage twice, on its usage chunk and as this copy;
 * only the copy names the model, so it is the one mull keeps, with the id
 * the importer derives from the same row (dshId(seq, 'usage')).
 */
export function mapUsage (s, event) {
  const data = event?.data
  if (event?.type !== 'assistant/message' || !Number.isInteger(event.seq) || !isObject(data?.usage)) return []
  const raw = data.usage
  const output = tokens(raw.outputTokens)
  const payload = {
    model: label(data.message?.source?.model, MAX_NAME),
    provider: label(data.message?.source?.provider, MAX_NAME),
    input_tokens: tokens(raw.inputTokens),
    cache_read_tokens: tokens(raw.cacheReadTokens),
    output_tokens: output,
    reasoning_tokens: raw.reasoningTokens == null ? undefined : Math.min(tokens(raw.reasoningTokens), output),
    turn: Number.isInteger(data.turn) && data.turn > 0 ? data.turn : undefined,
    step: Number.isInteger(data.step) && data.step > 0 ? data.step : undefined
  }
  return [mullEvent(dshId(s.id, event.seq, 'usage'), 'usage', s.id, s.workspace, event.time, payload)]
}

/** A token count mull takes: a whole number from 0 to 2^40, else 0. */
function tokens (n) {
  return Number.isInteger(n) && n >= 0 && n <= MAX_TOKENS ? n : 0
}

/** s if mull takes it as a one-line name of at most max bytes, else undefined. */
function label (s, max) {
  if (typeof s !== 'string' || !s || Buffer.byteLength(s, 'utf8') > max) return undefined
  return /[\u0000-\u001f\u007f-\u009f]/.test(s) || !s.isWellFormed() ? undefined : s
}

function isObject (v) {
  return v != null && typeof v === 'object' && !Array.isArray(v)
}

/**
 * The session_title event for a session/title row, or [] when it has no
 * title. source is DSH's "fallback" (cut from the prompt) or the maker.
 */
export function mapTitle (s, event) {
  const title = typeof event?.data?.title === 'string' ? event.data.title.trim() : ''
  if (!Number.isInteger(event?.seq) || !title) return []
  const payload = { title: cutMiddle(title, MAX_TITLE), source: label(event.data.source?.kind, MAX_NAME) }
  return [mullEvent(dshId(s.id, event.seq), 'session_title', s.id, s.workspace, event.time, payload)]
}

/**
 * The provider failure's HTTP status and request id, as error payload
 * fields, when mull would take them (DSH's failure {message, code, status?,
 * requestId?}).
 */
export function failureDetail (failure) {
  const status = failure?.status
  return {
    status: Number.isInteger(status) && status >= 100 && status <= 599 ? status : undefined,
    request_id: label(failure?.requestId, MAX_ID)
  }
}
