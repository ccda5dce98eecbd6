// The refined harness (seed 004), on the DSH side: mull's projection of the
// session's harness entries as ONE message in the session, replaced in
// place when its ETag changes; mull's global skill entries (and playbooks)
// materialized as DSH skill bundles under the skills dir; and the
// harness_refine and harness_wrapup tools.
//
// Like the digest and the notices: every fetch runs in the background with
// If-None-Match and the client's timeout, the step takes what is cached, and
// when mull is down nothing here throws (the client logs its one line).
//
// Provenance of the skills dir: the plugin writes only directories named
// mull-<id> that it owns: a `.mull-managed` file in the directory and, when
// a SKILL.md is there, mull's marker in its frontmatter (metadata.author:
// mull). A directory without both is the user's and is never written,
// replaced or removed, whatever its name.

import { mkdir, readFile, readdir, rename, rmdir, unlink, writeFile } from 'node:fs/promises'
import { randomUUID } from 'node:crypto'
import { homedir } from 'node:os'
import { join } from 'node:path'

/** The file that marks a skill directory as mull's. */
export const MANAGED_FILE = '.mull-managed'
/** What a mull skill directory's name starts with (harness.SkillName). */
export const SKILL_PREFIX = 'mull-'
/** A skill directory name the plugin may write: mull- and kebab-case (never a path). */
export const SKILL_NAME_RE = /^mull-[a-z0-9]+(?:-[a-z0-9]+)*$/
/** The longest the harness_refine tool follows a planning job. */
export const REFINE_FOLLOW_MS = 90000
/** The pauses between the polls of a planning job: backoff, then every 5 s. */
export const REFINE_POLL_MS = Object.freeze([250, 500, 1000, 2000, 4000, 5000])
/** Job states River never leaves. */
const FINAL_STATES = new Set(['completed', 'discarded', 'cancelled'])

/**
 * The default skills dir: DSH's user root, `$DSH_HOME/skills`, else
 * `~/.dsh/skills` (as DSH's dsh-home-paths resolves its home).
 */
export function defaultSkillsDir (env = process.env) {
  const home = typeof env.DSH_HOME === 'string' && env.DSH_HOME.trim() ? env.DSH_HOME.trim() : join(homedir(), '.dsh')
  return join(home, 'skills')
}

/**
 * Whether a SKILL.md text carries mull's provenance marker: the line
 * `  author: mull` inside the metadata block of its frontmatter
 * (learn/harness SkillMarkdown writes it).
 */
export function hasMullMarker (text) {
  if (typeof text !== 'string') return false
  const m = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(text)
  if (!m) return false
  let inMetadata = false
  for (const line of m[1].split(/\r?\n/)) {
    if (/^metadata:\s*$/.test(line)) { inMetadata = true; continue }
    if (/^\S/.test(line)) inMetadata = false
    if (inMetadata && /^\s+author:\s*["']?mull["']?\s*$/.test(line)) return true
  }
  return false
}

/**
 * The per-step message that carries the projection. DSH persists it in the
 * session log (source kind "plugin", form "recall"); the text is mull's,
 * already through its trust gate, with `{{` broken apart as the digest's.
 */
export function harnessMessage (text, etag, pluginName) {
  const safe = text.replace(/\{(?=\{)/g, '{ ').replace(/\}(?=\})/g, '} ')
  return Object.freeze({
    id: randomUUID(),
    role: 'user',
    content: Object.freeze([Object.freeze({ type: 'text', text: `<mull-harness etag="${String(etag).replace(/["<>&]/g, '')}">\n${safe}\n</mull-harness>` })]),
    source: Object.freeze({ kind: 'plugin', plugin: pluginName, form: 'recall' })
  })
}

export class Harness {
  /**
   * @param {object} o
   * @param {import('./client.mjs').MullClient} o.client
   * @param {(level: string, msg: string) => void} o.log
   * @param {string} o.skillsDir
   * @param {string} [o.pluginName]
   * @param {(session: string) => Promise<void>} [o.ready] - sends the queued events (the session's start) first: mull serves only known sessions
   * @param {{follow?: number, poll?: number[]}} [o.timing] - harness_refine's follow bound and poll pauses (tests)
   */
  constructor ({ client, log, skillsDir, pluginName = 'mull', ready = async () => {}, clock = client.clock, timing = {} }) {
    this.client = client
    this.log = log
    this.clock = clock
    this.skillsDir = skillsDir
    this.pluginName = pluginName
    this.ready = ready
    this.followMs = timing.follow ?? REFINE_FOLLOW_MS
    this.pollMs = timing.poll ?? REFINE_POLL_MS
    this.sessions = new Map() // session → state
    this.skillLists = new Map() // session → [{name, markdown, …}] as last served
    this.syncing = Promise.resolve() // skill reconciles run one at a time
    this.warned = new Set()
  }

  state (session) {
    let s = this.sessions.get(session)
    if (!s) {
      s = { projection: null, shown: '', projectionRun: null, skillsEtag: '', skillsRun: null, first: null }
      this.sessions.set(session, s)
    }
    return s
  }

  forget (session) {
    this.sessions.delete(session)
    this.skillLists.delete(session)
  }

  /**
   * A session started: fetch its projection and its skills in the
   * background. Resolves when both are done; never rejects.
   */
  start (session) {
    if (!session) return Promise.resolve()
    const s = this.state(session)
    if (!s.first) s.first = this.refresh(session)
    return s.first
  }

  /** Refreshes a session's projection and skills; never rejects. */
  refresh (session) {
    if (!session) return Promise.resolve()
    return Promise.all([this.refreshProjection(session), this.refreshSkills(session)]).then(() => {})
  }

  /**
   * Waits for a session's first fetch at most ms (the first step only, so
   * the skills are on disk before DSH lists its catalog and the projection
   * is in the first step). Later steps never wait.
   */
  async settle (session, ms) {
    const s = this.sessions.get(session)
    if (!s?.first || s.settled) return
    s.settled = true
    // A plain timer, not a request deadline: the wait is the step's bound.
    // It holds the process (the clock's timers do not): the step waits on
    // it, and an unref'd wait could let node exit mid-step.
    let timer
    await Promise.race([s.first, new Promise(resolve => {
      timer = this.clock.setTimeout(resolve, ms)
      timer?.ref?.()
    })])
    this.clock.clearTimeout(timer)
  }

  refreshProjection (session) {
    const s = this.state(session)
    if (s.projectionRun) return s.projectionRun
    s.projectionRun = this.fetchProjection(session, s).catch(() => {}).finally(() => { s.projectionRun = null })
    return s.projectionRun
  }

  async fetchProjection (session, s) {
    await this.ready(session)
    const etag = s.projection?.etag
    const res = await this.client.request('GET', '/v1/harness/projection', { query: { session }, headers: etag ? { 'if-none-match': etag } : {} })
    if (res === null || res.status === 304) return
    const b = res.body
    if (res.status !== 200 || typeof b?.text !== 'string') {
      this.warnOnce(`projection:${res.status}`, `mull answered HTTP ${res.status} to GET /v1/harness/projection${b?.error ? ': ' + b.error : ''}; the harness is not injected until it serves one`)
      return
    }
    const keys = Array.isArray(b.keys) ? b.keys.filter(k => typeof k === 'string') : []
    const count = Number.isInteger(b.count) ? b.count : keys.length
    s.projection = { text: b.text.trim(), etag: res.headers?.get?.('etag') || String(b.etag ?? ''), keys, count }
  }

  /**
   * The projection for this step, when its ETag differs from the block the
   * session shows (seed 004 projection.ts): one <mull-harness> block is
   * kept in the model's context, never a pile of them.
   *
   * With DSH's session surface (agent.session: events, surface.nodes and
   * append with surfaceOp replace; DSH 0.1.0-rc.8 has them) the last
   * visible block is found in the session log: the same ETag shows already
   * (this process injected it, or a resumed session's earlier process did)
   * and nothing is sent; another ETag is replaced in place right here
   * (session.append of a user/message with surfaceOp replace of its seq)
   * and null returned; no visible block (none yet, or a compaction dropped
   * it) makes the message to append at the tail of the step's messages,
   * returned. Without that API (an older DSH) each change is appended,
   * as before, and one line says so.
   *
   * As the seed, an overview of no entry is not shown while nothing is
   * visible (then it is, so the names shown before are retired), and a
   * first block is not added to a step with no message of its own (that
   * would make DSH run a step it was about to skip). Counts the shown keys
   * in mull (POST /v1/harness/injections) in the background. Synchronous.
   * @param {string} session
   * @param {object} [agent] - DSH's agent (its session is read and replaced into)
   * @param {number} [pending] - how many messages the step carries already
   */
  take (session, agent, pending = 1) {
    const s = this.sessions.get(session)
    const p = s?.projection
    if (!p || !p.etag) return null
    const log = surfaceOf(agent?.session)
    let replaceSeq
    if (log) {
      const block = visibleBlock(log, this.pluginName)
      if (block && block.etag === etagAttr(p.etag)) {
        s.shown = p.etag
        return null
      }
      if (block) replaceSeq = block.seq
      else if (p.count === 0) return null
    } else {
      if (p.etag === s.shown) return null
      if (p.count === 0 && !s.shown) return null
    }
    if (!p.text) {
      s.shown = p.etag
      return null
    }
    const m = harnessMessage(p.text, p.etag, this.pluginName)
    if (replaceSeq !== undefined) {
      try {
        log.append('user/message', m, { surfaceOp: { op: 'replace', start: replaceSeq, end: replaceSeq }, sourceEventSeqs: [replaceSeq] })
        s.shown = p.etag
        this.countInjections(session, p.keys)
        return null
      } catch (err) {
        this.warnOnce('harness-replace', `mull plugin: DSH refused to replace the harness block in place (${err?.message ?? err}); each change is appended instead`)
      }
    } else if (!log && s.shown) {
      this.warnOnce('harness-surface', 'mull plugin: this DSH has no session surface to replace the harness block in place (session.append with surfaceOp replace); each change is appended as a new block')
    }
    if (pending === 0) return null
    s.shown = p.etag
    this.countInjections(session, p.keys)
    return m
  }

  countInjections (session, keys) {
    if (keys.length === 0) return
    this.client.request('POST', '/v1/harness/injections', { body: { session, keys } }).then(res => {
      if (res && res.status >= 300) this.warnOnce(`injections:${res.status}`, `mull answered HTTP ${res.status} to POST /v1/harness/injections; the wrap-up's counts may be low`)
    }, () => {})
  }

  refreshSkills (session) {
    const s = this.state(session)
    if (s.skillsRun) return s.skillsRun
    s.skillsRun = this.fetchSkills(session, s).catch(err => {
      this.warnOnce('skills-bug', `mull plugin: skills sync failed (${err?.message ?? err}); ignored`)
    }).finally(() => { s.skillsRun = null })
    return s.skillsRun
  }

  async fetchSkills (session, s) {
    await this.ready(session)
    const res = await this.client.request('GET', '/v1/harness/skills', { query: { session }, headers: s.skillsEtag ? { 'if-none-match': s.skillsEtag } : {} })
    if (res === null) return
    if (res.status === 304) return this.reconcile()
    const b = res.body
    if (res.status !== 200 || !Array.isArray(b?.skills)) {
      this.warnOnce(`skills:${res.status}`, `mull answered HTTP ${res.status} to GET /v1/harness/skills${b?.error ? ': ' + b.error : ''}; mull's skills are not materialized until it serves them`)
      return
    }
    const list = []
    for (const k of b.skills) {
      // DSH's skills dir is shared by every session on the machine: only
      // global skill entries and playbooks belong there (mull serves no
      // other; a session-local skill stays in that session's projection).
      if (k?.source !== 'harness' && k?.source !== 'playbook') {
        this.warnOnce(`skill-source:${k?.name}`, `mull plugin: skill ${JSON.stringify(k?.name)} from mull has source ${JSON.stringify(k?.source)}, not "harness" or "playbook"; not written (the skills dir is shared by every session)`)
        continue
      }
      if (!SKILL_NAME_RE.test(k?.name ?? '') || typeof k.markdown !== 'string' || !hasMullMarker(k.markdown)) {
        this.warnOnce(`skill-bad:${k?.name}`, `mull plugin: skill ${JSON.stringify(k?.name)} from mull is not a mull-<id> bundle with mull's marker; not written`)
        continue
      }
      list.push({ name: k.name, markdown: k.markdown.endsWith('\n') ? k.markdown : k.markdown + '\n' })
    }
    this.skillLists.set(session, list)
    s.skillsEtag = res.headers?.get?.('etag') || String(b.etag ?? '')
    return this.reconcile()
  }

  /**
   * Brings the skills dir in line with what mull last served for the
   * sessions this process runs: each bundle written (when missing or
   * different), each mull-owned directory no session has any more removed.
   * Runs one at a time. Resolves to {written, removed, skipped} (names).
   */
  reconcile () {
    const run = this.syncing.then(() => this.reconcileNow())
    this.syncing = run.catch(() => {})
    return run
  }

  async reconcileNow () {
    const want = new Map()
    for (const list of this.skillLists.values()) for (const k of list) want.set(k.name, k.markdown)
    const out = { written: [], removed: [], skipped: [] }
    for (const [name, markdown] of want) {
      const dir = join(this.skillsDir, name)
      const owner = await ownership(dir)
      if (owner === 'user') {
        out.skipped.push(name)
        this.warnOnce(`skill-user:${name}`, `mull plugin: ${dir} is not mull's (no ${MANAGED_FILE} and mull marker); left alone, so mull's skill ${name} is not materialized`)
        continue
      }
      if (owner === 'mull' && await readText(join(dir, 'SKILL.md')) === markdown) continue
      try {
        await mkdir(dir, { recursive: true })
        // The provenance file first: a crash before SKILL.md leaves a directory still known as mull's.
        await atomicWrite(join(dir, MANAGED_FILE), 'Written by mull\'s DSH plugin; removed with the skill when mull no longer serves it. Remove this file to keep the directory as your own.\n')
        await atomicWrite(join(dir, 'SKILL.md'), markdown)
        out.written.push(name)
      } catch (err) {
        this.warnOnce(`skill-write:${name}`, `mull plugin: cannot write ${dir}/SKILL.md (${err?.message ?? err})`)
      }
    }
    let entries = []
    try {
      entries = await readdir(this.skillsDir, { withFileTypes: true })
    } catch {}
    for (const e of entries) {
      if (!e.isDirectory() || !e.name.startsWith(SKILL_PREFIX) || want.has(e.name)) continue
      const dir = join(this.skillsDir, e.name)
      if (await ownership(dir) !== 'mull') continue
      try {
        await unlink(join(dir, 'SKILL.md')).catch(err => { if (err?.code !== 'ENOENT') throw err })
        await unlink(join(dir, MANAGED_FILE))
        // Only an empty directory goes: a file someone added stays, with its directory.
        await rmdir(dir).catch(() => {})
        out.removed.push(e.name)
      } catch (err) {
        this.warnOnce(`skill-rm:${e.name}`, `mull plugin: cannot remove ${dir} (${err?.message ?? err})`)
      }
    }
    return out
  }

  /** The harness_refine and harness_wrapup tools' defineTool options. */
  toolSpecs ({ where, sendQueued = async () => {} }) {
    const client = this.client
    const sessionOf = async (exec, tool) => {
      const { session } = where(exec?.agent)
      if (!session) throw new Error(`${tool} needs a live agent session`)
      await sendQueued(exec?.agent)
      return session
    }
    const self = this

    const refine = {
      name: 'harness_refine',
      description: 'Refine this agent\'s harness in mull: plan small, evidence-backed edits to its prompt notes, memories, skills or subagent specs ' +
        'from the current trajectory (mode plan, optionally with an instruction to focus the planner), or roll back a prior refinement by id ' +
        '(mode rollback, with rollback_id and the scope it was applied to). Every edit goes through mull\'s validation and is versioned and reversible. ' +
        'The base system prompt is immutable. Use after a repeated failure, a reusable tactic, or a durable fact or preference.',
      parameters: {
        mode: { type: 'string', enum: ['plan', 'rollback'], description: 'plan (the default): plan and apply new edits; rollback: reverse the refinement rollback_id.' },
        instruction: { type: 'string', description: 'plan: focus instructions for the planner, e.g. "save the error-handling pattern as a skill".' },
        global: { type: 'boolean', description: 'plan: target the global store (every session) instead of this session\'s local one.' },
        rollback_id: { type: 'string', description: 'rollback: the id of the refinement to roll back.' },
        scope: { type: 'string', enum: ['local', 'global'], description: 'rollback, required: the store the refinement was applied to.' }
      },
      output: {
        schema: { type: 'object', additionalProperties: true },
        render: (_args, v) => [{ type: 'text', text: JSON.stringify(v) }]
      },
      async execute (args, exec) {
        const mode = args?.mode ?? 'plan'
        if (mode !== 'plan' && mode !== 'rollback') throw new Error(`harness_refine: mode must be plan or rollback, not ${JSON.stringify(mode)}`)
        const body = { mode }
        if (mode === 'rollback') {
          const id = typeof args.rollback_id === 'string' ? args.rollback_id.trim() : ''
          if (!id) throw new Error('harness_refine: rollback needs rollback_id, the id of the refinement to roll back')
          if (args.scope !== 'local' && args.scope !== 'global') throw new Error('harness_refine: rollback needs scope, "local" or "global", stated explicitly')
          body.rollback_id = id
          body.scope = args.scope
        } else {
          if (typeof args?.instruction === 'string' && args.instruction.trim()) body.instruction = args.instruction.trim()
          if (typeof args?.global === 'boolean') body.global = args.global
        }
        body.session = await sessionOf(exec, 'harness_refine')
        const res = await client.request('POST', '/v1/harness/refine', { body, force: true })
        if (res === null) throw new Error('mull is unavailable; the harness was not refined')
        if (mode === 'rollback') {
          if (res.status === 202 && res.body?.pending_proposal) return pending(res.body.pending_proposal, body.scope)
          if (res.status !== 200) throw httpError(res, 'POST /v1/harness/refine')
          return summarize('applied', res.body?.refinement, { scope: body.scope })
        }
        const scope = body.global ? 'global' : 'local'
        // Another review of this store is queued or running (the job is
        // unique per store): mull refuses to fold this request into it.
        if (res.status === 409) return busy(res.body, scope)
        if (res.status !== 202 && res.status !== 200) throw httpError(res, 'POST /v1/harness/refine')
        const jobId = res.body?.job_id
        if (jobId === undefined || jobId === null || jobId === '') throw new Error('mull accepted the refinement but named no job_id')
        const out = await self.follow(jobId, res.body?.scope, exec?.signal, body.session)
        if (res.body?.duplicate !== true) return out
        // The same refine (this session, this instruction) was queued
        // already: this is that job's outcome, not a new one's.
        return {
          ...out,
          duplicate: true,
          note: `the same refine was already queued as job ${jobId}; this is that job's outcome, no second job was queued`
        }
      }
    }

    const wrapup = {
      name: 'harness_wrapup',
      description: 'Review this session\'s local harness entries: mull suggests keep, promote or archive for each, deterministically ' +
        '(never injected: archive; injected and no same-id global entry: promote; else keep). Optionally promote local entries to the ' +
        'global store by id (a copy; the local entry stays).',
      parameters: {
        promote: { type: 'array', items: { type: 'string' }, description: 'Local entry ids to promote to the global store by copy.' }
      },
      isConcurrencySafe: () => false,
      output: {
        schema: { type: 'object', additionalProperties: true },
        render: (_args, v) => [{ type: 'text', text: JSON.stringify(v) }]
      },
      async execute (args, exec) {
        let ids = args?.promote ?? []
        if (typeof ids === 'string') ids = ids.trim() ? [ids] : []
        if (!Array.isArray(ids) || !ids.every(i => typeof i === 'string')) throw new Error('harness_wrapup: promote must be a list of local entry ids')
        ids = [...new Set(ids.map(i => i.trim()).filter(Boolean))]
        const session = await sessionOf(exec, 'harness_wrapup')
        const res = await client.request('GET', '/v1/harness/wrapup', { query: { session }, force: true })
        if (res === null) throw new Error('mull is unavailable; no wrap-up now')
        if (res.status !== 200) throw httpError(res, 'GET /v1/harness/wrapup')
        const suggestions = (Array.isArray(res.body?.suggestions) ? res.body.suggestions : [])
          .map(x => ({ id: String(x?.id ?? ''), kind: String(x?.kind ?? ''), fate: String(x?.fate ?? ''), reason: String(x?.reason ?? '') }))
        if (ids.length === 0) return { suggestions }
        const promoted = []
        for (const id of ids) {
          const p = await client.request('POST', '/v1/harness/promote', { body: { session, id }, force: true })
          if (p === null) promoted.push({ id, applied: false, error: 'mull is unavailable; not promoted' })
          else if (p.status === 200) promoted.push({ id, applied: true, refinement_id: String(p.body?.refinement?.id ?? '') })
          else if (p.status === 202 && p.body?.pending_proposal) promoted.push({ id, applied: false, pending_proposal: String(p.body.pending_proposal), error: 'waits for approval (harness.require_global_approval)' })
          else promoted.push({ id, applied: false, error: p.body?.error ? String(p.body.error) : `HTTP ${p.status}` })
        }
        return { suggestions, promoted }
      }
    }
    return [refine, wrapup]
  }

  /**
   * Follows a planning job (GET /v1/harness/refine/{id}) until it ends,
   * fails towards a retry, or followMs passes: polls with backoff on the
   * clock. Resolves to the tool's result.
   */
  async follow (jobId, scope, signal, session) {
    const start = this.clock.now()
    const path = `/v1/harness/refine/${encodeURIComponent(String(jobId))}`
    let last = null
    for (let i = 0; ; i++) {
      // mull answers about a job only to the session that started it.
      const res = await this.client.request('GET', path, { query: session ? { session } : undefined, force: true })
      if (res !== null && res.status !== 200) throw httpError(res, `GET ${path}`)
      if (res !== null) {
        last = res.body ?? {}
        const outcome = last.review?.outcome
        if (FINAL_STATES.has(last.state) || (outcome && outcome !== 'failed') || last.state === 'retryable') break
      }
      const left = this.followMs - (this.clock.now() - start)
      if (left <= 0 || signal?.aborted) break
      // The pause holds the process (the clock's timers do not): the tool call waits on it.
      await new Promise(resolve => this.clock.setTimeout(resolve, Math.min(left, this.pollMs[Math.min(i, this.pollMs.length - 1)]))?.ref?.())
    }
    return fromJob(jobId, scope, last)
  }

  warnOnce (key, msg) {
    if (this.warned.has(key)) return
    this.warned.add(key)
    this.log('warn', msg)
  }
}

/** The ETag as harnessMessage writes it into the block's attribute. */
export function etagAttr (etag) {
  return String(etag).replace(/["<>&]/g, '')
}

const BLOCK_RE = /^<mull-harness etag="([^"]*)">\n/

/**
 * A DSH session with the surface the harness block is replaced through
 * (events, surface.nodes, append), or null (an older DSH, a test's bare one).
 */
export function surfaceOf (session) {
  try {
    if (!session || typeof session.append !== 'function' || !Array.isArray(session.events)) return null
    return Array.isArray(session.surface?.nodes) ? session : null
  } catch {
    return null
  }
}

/**
 * The last harness block of this plugin still on the session's surface
 * (a block a replace or a compaction shadowed does not count), as {seq,
 * etag}, or undefined (the seed's findHarnessStateSeq).
 */
export function visibleBlock (session, pluginName) {
  const surface = new Set(session.surface.nodes)
  const events = session.events
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]
    if (e?.type !== 'user/message' || !surface.has(e.seq)) continue
    const src = e.data?.source
    if (src?.kind !== 'plugin' || src.plugin !== pluginName) continue
    const m = BLOCK_RE.exec(e.data?.content?.[0]?.text ?? '')
    if (m) return { seq: e.seq, etag: m[1] }
  }
  return undefined
}

/**
 * Who owns a skill directory: 'none' (absent), 'mull' (its .mull-managed
 * file, and a SKILL.md with mull's marker or none yet), else 'user'.
 */
async function ownership (dir) {
  let names
  try {
    names = await readdir(dir)
  } catch (err) {
    return err?.code === 'ENOENT' ? 'none' : 'user'
  }
  if (!names.includes(MANAGED_FILE)) return 'user'
  if (!names.includes('SKILL.md')) return 'mull'
  return hasMullMarker(await readText(join(dir, 'SKILL.md'))) ? 'mull' : 'user'
}

async function readText (file) {
  try { return await readFile(file, 'utf8') } catch { return undefined }
}

let tmpSeq = 0
/** Writes a file through a temporary one in the same directory and a rename. */
async function atomicWrite (file, text) {
  const tmp = `${file}.tmp-${process.pid}-${++tmpSeq}`
  try {
    await writeFile(tmp, text, 'utf8')
    await rename(tmp, file)
  } catch (err) {
    await unlink(tmp).catch(() => {})
    throw err
  }
}

function httpError (res, what) {
  return new Error(`mull answered HTTP ${res.status} to ${what}${res.body?.error ? ': ' + res.body.error : ''}`)
}

/** The seed's result fields (refinement_id, scope, summary, applied, failed, edits) for one refinement, with status and rejected. */
function summarize (status, r, extra = {}) {
  const edits = (Array.isArray(r?.applied_edits) ? r.applied_edits : []).map(e => ({
    action: e.action,
    kind: e.kind,
    id: e.id,
    applied: e.applied === true,
    ...(e.error ? { error: e.error } : {}),
    ...(e.reason ? { reason: e.reason } : {}),
    ...(e.blast_radius ? { blastRadius: e.blast_radius } : {})
  }))
  const scope = extra.scope ?? (r?.scope?.session ? 'local' : 'global')
  return {
    status,
    ...extra,
    scope,
    refinement_id: String(r?.id ?? 'none'),
    summary: String(r?.summary ?? ''),
    applied: edits.filter(e => e.applied).length,
    failed: edits.filter(e => !e.applied).length,
    rejected: edits.filter(e => !e.applied).map(({ kind, id, action, error }) => ({ kind, id, action, error: error ?? '' })),
    edits
  }
}

/** A refinement held by harness.require_global_approval: it waits as a proposal. */
function pending (id, scope) {
  return {
    status: 'pending-approval',
    scope,
    refinement_id: String(id),
    summary: `waits for approval as proposal ${id} (harness.require_global_approval): mull proposals show ${id}`,
    applied: 0,
    failed: 0,
    rejected: [],
    edits: []
  }
}

/**
 * A planning request mull answered 409: a review of the store is queued or
 * running already (it is unique per store) and is not this request, so
 * joining it would drop this one's instruction. Nothing was queued.
 */
function busy (body, scope) {
  const jobId = body?.job_id
  const error = body?.error ? String(body.error) : 'a review of this store is already queued; try again after it'
  return {
    status: 'already-queued',
    ...(jobId !== undefined && jobId !== null ? { job_id: jobId } : {}),
    scope,
    refinement_id: 'none',
    summary: `not queued: ${error}`,
    applied: 0,
    failed: 0,
    rejected: [],
    edits: []
  }
}

/** harness_refine's result from the last answer of GET /v1/harness/refine/{id}. */
function fromJob (jobId, scope, job) {
  const review = job?.review
  const base = { job_id: jobId, scope: scope === 'global' || scope === 'local' ? scope : undefined }
  if (!job) return { status: 'unknown', ...base, summary: 'mull did not answer about the job; see mull harness reviews', refinement_id: 'none', applied: 0, failed: 0, rejected: [], edits: [] }
  const errors = Array.isArray(job.errors) ? job.errors.map(String) : []
  let status
  const held = job.pending_proposal || (review?.outcome === 'approved' && !job.refinement && review.refinement_id)
  if (review?.outcome) status = held ? 'pending-approval' : review.outcome
  else if (job.state === 'retryable') status = 'retrying'
  else if (FINAL_STATES.has(job.state)) status = job.state === 'completed' ? 'assessed' : 'failed'
  else status = 'running'
  const out = summarize(status, job.refinement, { ...base, state: String(job.state ?? '') })
  if (!base.scope) out.scope = job.refinement ? out.scope : undefined
  if (!job.refinement && (job.pending_proposal || review?.refinement_id)) out.refinement_id = String(job.pending_proposal || review.refinement_id)
  if (review?.rationale) out.rationale = String(review.rationale)
  if (!job.refinement && Array.isArray(review?.rejected_edits)) out.rejected = review.rejected_edits
  if (!out.summary) out.summary = status === 'running' ? `still running after ${Math.round(REFINE_FOLLOW_MS / 1000)}s; see mull harness reviews` : String(review?.rationale ?? '')
  if (errors.length) out.errors = errors
  if (out.scope === undefined) delete out.scope
  return out
}
