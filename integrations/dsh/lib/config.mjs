// The plugin's config: defaults, and a value that does not fit falls back
// to its default with one warning, so a typo never stops DSH.

import { isAbsolute } from 'node:path'

import { defaultSkillsDir } from './harness.mjs'

export const DEFAULTS = Object.freeze({
  baseUrl: 'http://127.0.0.1:7788',
  apiToken: '',
  timeoutMs: 1500,
  queueMax: 1000,
  flushMs: 500,
  batchMax: 100,
  digestRefreshMs: 30000,
  section: Object.freeze({ name: 'mull-memory', order: 60 }),
  notices: true,
  tools: true,
  // The slash commands (/memory, /forget, /retro, /promote, /proposals,
  // /mull and /selfip), where DSH has the commands capability.
  commands: true,
  taskHints: true,
  forwardMessages: true,
  // The refined harness (seed 004): the projection message, the skills
  // materialized under skillsDir ('' is DSH's own: $DSH_HOME/skills or
  // ~/.dsh/skills) and the harness_refine, harness_wrapup and
  // harness_benchmark tools.
  harness: true,
  skillsDir: '',
  // A benchmark cell (lib/bench.mjs): the id of the snapshot this DSH run
  // is shown instead of anything live; '' is a normal session.
  benchSnapshot: '',
  dshToolsModule: '',
  logTo: 'dsh',
  // The negative ledger (seed 003). mode is what the plugin assumes until
  // mull's policy for the workspace answers (mull's mode wins then); off
  // here turns the ledger off in this plugin: no ledger call at all.
  ledger: Object.freeze({
    mode: 'warn',
    commandTools: Object.freeze(['bash', 'pwsh']),
    readTools: Object.freeze(['read']),
    timeoutMs: 250,
    policyRefreshMs: 300000,
    fsBatchMs: 5,
    fsQueueMax: 1000
  })
})

/** mull takes at most this many events per POST (events.MaxBatch). */
const MAX_BATCH = 1000

export function normalizeConfig (raw, warn = () => {}) {
  const c = raw && typeof raw === 'object' ? raw : {}
  const bad = (key, v) => warn(`mull plugin config: ${key}=${JSON.stringify(v)} is not valid; using ${JSON.stringify(key.split('.').reduce((o, k) => o[k], DEFAULTS))}`)
  const int = (key, min, max) => {
    const v = c[key]
    if (v === undefined || v === null) return DEFAULTS[key]
    if (Number.isInteger(v) && v >= min && v <= max) return v
    bad(key, v)
    return DEFAULTS[key]
  }
  const bool = key => {
    const v = c[key]
    if (v === undefined || v === null) return DEFAULTS[key]
    if (typeof v === 'boolean') return v
    bad(key, v)
    return DEFAULTS[key]
  }
  const str = key => {
    const v = c[key]
    if (v === undefined || v === null) return DEFAULTS[key]
    if (typeof v === 'string') return v
    bad(key, v)
    return DEFAULTS[key]
  }

  const oneOf = (key, allowed) => {
    const v = c[key]
    if (v === undefined || v === null) return DEFAULTS[key]
    if (allowed.includes(v)) return v
    bad(key, v)
    return DEFAULTS[key]
  }

  let baseUrl = str('baseUrl').trim().replace(/\/+$/, '')
  try {
    const u = new URL(baseUrl)
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme')
  } catch {
    bad('baseUrl', c.baseUrl)
    baseUrl = DEFAULTS.baseUrl
  }

  const section = { ...DEFAULTS.section }
  if (c.section !== undefined && c.section !== null) {
    const s = c.section
    if (typeof s !== 'object') bad('section', s)
    else {
      if (s.name !== undefined) {
        if (typeof s.name === 'string' && s.name.trim()) section.name = s.name.trim()
        else bad('section.name', s.name)
      }
      if (s.order !== undefined) {
        if (Number.isFinite(s.order)) section.order = s.order
        else bad('section.order', s.order)
      }
    }
  }

  const bench = benchSnapshot(c.benchSnapshot, warn)
  return {
    ledger: ledgerConfig(c.ledger, bad, warn),
    baseUrl,
    // A benchmark cell's DSH is given its cell's capability
    // (MULL_BENCH_CAPABILITY: that snapshot only, until the cell's
    // timeout), never mull's API token.
    apiToken: str('apiToken').trim() || (bench ? process.env.MULL_BENCH_CAPABILITY : '') || process.env.MULL_API_TOKEN || '',
    timeoutMs: int('timeoutMs', 50, 60000),
    queueMax: int('queueMax', 1, 1000000),
    flushMs: int('flushMs', 0, 600000),
    batchMax: int('batchMax', 1, MAX_BATCH),
    digestRefreshMs: int('digestRefreshMs', 1000, 86400000),
    section,
    notices: bool('notices'),
    tools: bool('tools'),
    commands: bool('commands'),
    taskHints: bool('taskHints'),
    forwardMessages: bool('forwardMessages'),
    harness: bool('harness'),
    skillsDir: skillsDir(c.skillsDir, warn),
    benchSnapshot: bench,
    dshToolsModule: str('dshToolsModule').trim(),
    logTo: oneOf('logTo', ['dsh', 'stderr'])
  }
}

/** skillsDir: an absolute path, else DSH's own skills dir. */
function skillsDir (v, warn) {
  if (v === undefined || v === null || v === '') return defaultSkillsDir()
  if (typeof v === 'string' && isAbsolute(v.trim())) return v.trim()
  warn(`mull plugin config: skillsDir=${JSON.stringify(v)} is not an absolute path; using ${defaultSkillsDir()}`)
  return defaultSkillsDir()
}

/**
 * benchSnapshot: a snapshot id ('' or blank: none). Unlike the other keys a
 * value that does not fit never falls back to the default, which would be
 * live memory in a benchmark cell: a number is read as its digits (YAML's
 * `benchSnapshot: 42`), anything else is kept as written, so the cell
 * refuses to run with a clear line instead (lib/bench.mjs).
 */
function benchSnapshot (v, warn) {
  if (v === undefined || v === null) return ''
  if (typeof v === 'string') return v.trim()
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return String(v)
  const kept = JSON.stringify(v) ?? String(v)
  warn(`mull plugin config: benchSnapshot=${kept} is not a snapshot id; this benchmark cell will refuse to run`)
  return kept
}

/** The ledger block: each key checked on its own, a bad one falls back to its default. */
function ledgerConfig (raw, bad, warn) {
  const D = DEFAULTS.ledger
  const out = { ...D, commandTools: [...D.commandTools], readTools: [...D.readTools] }
  if (raw === undefined || raw === null) return out
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    bad('ledger', raw)
    return out
  }
  const key = k => `ledger.${k}`
  if (raw.mode !== undefined) {
    if (['off', 'warn', 'block'].includes(raw.mode)) out.mode = raw.mode
    else bad(key('mode'), raw.mode)
  }
  for (const k of ['commandTools', 'readTools']) {
    const v = raw[k]
    if (v === undefined) continue
    if (Array.isArray(v) && v.every(n => typeof n === 'string' && n.trim())) out[k] = v.map(n => n.trim())
    else bad(key(k), v)
  }
  const ints = { timeoutMs: [10, 60000], policyRefreshMs: [1000, 86400000], fsBatchMs: [0, 10000], fsQueueMax: [1, 1000000] }
  for (const [k, [min, max]] of Object.entries(ints)) {
    const v = raw[k]
    if (v === undefined) continue
    if (Number.isInteger(v) && v >= min && v <= max) out[k] = v
    else bad(key(k), v)
  }
  for (const k of Object.keys(raw)) if (!(k in D)) warn(`mull plugin config: ${key(k)} is not a key the plugin knows; ignored`)
  return out
}
