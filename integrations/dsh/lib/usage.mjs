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
 * The id of a step's usage event. DSH writes each step's usage twice (the
 * usage chunk, then assistant/message.data.usage), so the id names the
 * step, not the row: whichever row the plugin or the importer sees first,
 * they derive the same id (dshlog.UsageID).
 */
export function usageId (sessionId, turn, step) {
  return `dsh:${sessionId}:usage:${turn}.${step}`
}

/** Per-session memory of the usage rule: the route and the last step mapped. */
export function newUsageState () {
  return { provider: undefined, model: undefined, step: undefined }
}

/**
 * The usage event for a session event, once per step, or [] for any other
 * row. u is the session's newUsageState(); request/context rows and
 * assistant messages update its route.
 */
export function mapUsage (s, u, event) {
  const data = event?.data
  if (!Number.isInteger(event?.seq) || data == null) return []
  switch (event.type) {
    case 'request/context':
      setRoute(u, data.provider, data.model)
      return []
    case 'assistant/chunk':
      if (data.chunk?.type !== 'usage' || !isObject(data.chunk.usage)) return []
      return usage(s, u, event, data.chunk.usage)
    case 'assistant/message':
      if (!isObject(data.usage)) return []
      setRoute(u, data.message?.source?.provider, data.message?.source?.model)
      return usage(s, u, event, data.usage)
    default:
      return []
  }
}

function usage (s, u, event, raw) {
  const turn = Number.isInteger(event.data.turn) && event.data.turn > 0 ? event.data.turn : 0
  const step = Number.isInteger(event.data.step) && event.data.step > 0 ? event.data.step : 0
  const key = `${turn}.${step}`
  if (turn > 0 && step > 0 && key === u.step) return []
  u.step = key
  const output = tokens(raw.outputTokens)
  const payload = {
    model: u.model,
    provider: u.provider,
    input_tokens: tokens(raw.inputTokens),
    cache_read_tokens: tokens(raw.cacheReadTokens),
    output_tokens: output,
    reasoning_tokens: raw.reasoningTokens == null ? undefined : Math.min(tokens(raw.reasoningTokens), output),
    turn: turn || undefined,
    step: step || undefined
  }
  const id = turn > 0 && step > 0 ? usageId(s.id, turn, step) : dshId(s.id, event.seq, 'usage')
  return [mullEvent(id, 'usage', s.id, s.workspace, event.time, payload)]
}

function setRoute (u, provider, model) {
  model = label(model, MAX_NAME)
  if (!model) return
  u.model = model
  u.provider = label(provider, MAX_NAME)
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
