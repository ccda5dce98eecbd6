// A fake Cordis ctx and DSH-shaped sessions for the plugin's tests.

import { readFileSync, existsSync, readdirSync, mkdtempSync, rmSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

// The plugin materializes mull's skills under $DSH_HOME/skills by default:
// a test process never touches the real DSH home, so it gets a throwaway one.
const testDshHome = mkdtempSync(join(tmpdir(), 'mull-plugin-test-dsh-'))
process.env.DSH_HOME = testDshHome
process.on('exit', () => { try { rmSync(testDshHome, { recursive: true, force: true }) } catch {} })

/** A ctx with on(), emit(), a pre-step waterfall, and recorders for sections and tools. */
export class FakeCtx {
  constructor () {
    this.listeners = new Map()
    this.sections = []
    this.registered = []
    this.logs = []
    // Called as Cordis' logger is: ('%s', msg).
    const rec = level => (...args) => this.logs.push({ level, msg: args[0] === '%s' ? args[1] : args[0] })
    this.logger = { debug: rec('debug'), info: rec('info'), warn: rec('warn'), error: rec('error') }
    this.systemPrompt = { section: s => { this.sections.push(s); return () => {} } }
    this.tools = { register: def => { this.registered.push(def); return () => {} } }
    // DSH's base bundle mounts the commands capability; a test of a host
    // without it sets this to undefined.
    this.commands = new FakeCommands()
  }

  on (name, fn) {
    if (!this.listeners.has(name)) this.listeners.set(name, [])
    this.listeners.get(name).push(fn)
    return () => this.listeners.set(name, this.listeners.get(name).filter(f => f !== fn))
  }

  /** Calls every listener of an emit-mode event; returns what they returned. */
  emit (name, ...args) {
    return (this.listeners.get(name) ?? []).map(fn => fn(...args))
  }

  /** Runs a waterfall event: each listener gets (...args, next); last is the default. */
  waterfall (name, args, last) {
    const chain = this.listeners.get(name) ?? []
    const call = i => i < chain.length ? chain[i](...args, () => call(i + 1)) : last()
    return call(0)
  }

  /** Warn and error lines logged so far. */
  warnings () {
    return this.logs.filter(l => l.level === 'warn' || l.level === 'error')
  }
}

/**
 * DSH's commands capability (@deepseek-ai/dsh-commands 0.1.0-rc.8,
 * CommandRuntime) as a plugin and a UI adapter see it: register() with the
 * package's checks on a definition, list(), find(), and execute(agent,
 * line, images, signal) with its parseCommand (a slash at byte zero, a
 * lowercase name, then end or whitespace; rawInput every byte after the
 * name) and its checks on a handler's result. A thrown handler rejects, as
 * there.
 */
export class FakeCommands {
  constructor () {
    this.defs = new Map()
    this.runs = 0
  }

  register (def) {
    if (!/^[a-z][a-z0-9_-]*$/u.test(def?.name)) throw new TypeError(`command name "${def?.name}" must match /^[a-z][a-z0-9_-]*$/u`)
    if (typeof def.description !== 'string' || !def.description.trim()) throw new TypeError(`command "${def.name}" description must not be empty`)
    if (typeof def.handler !== 'function') throw new TypeError(`command "${def.name}" handler must be a function`)
    if (def.input !== undefined && (typeof def.input?.hint !== 'string' || !def.input.hint.trim())) throw new TypeError(`command "${def.name}" input hint must be a string`)
    if (this.defs.has(def.name)) throw new Error(`command "${def.name}" is already registered`)
    this.defs.set(def.name, def)
    return () => this.defs.delete(def.name)
  }

  list () {
    return [...this.defs.values()].map(d => ({ name: d.name, description: d.description, ...(d.input ? { input: d.input } : {}) })).sort((a, b) => a.name < b.name ? -1 : 1)
  }

  find (_agent, name) {
    return this.defs.get(name)
  }

  async execute (agent, line, images = [], signal = new AbortController().signal) {
    const m = /^\/([a-z][a-z0-9_-]*)(?=$|[\t\n\r ])/u.exec(line)
    const def = m && this.defs.get(m[1])
    if (!def) return undefined
    const commandId = `cmd-fake-${++this.runs}`
    const result = await def.handler(Object.freeze({ commandId, agent, rawInput: line.slice(m[0].length), attachments: [], signal }))
    if (result?.kind === 'success') {
      if (result.text !== undefined && typeof result.text !== 'string') throw new TypeError(`command "${def.name}" success text must be a string when supplied`)
    } else if (result?.kind === 'error') {
      if (typeof result.text !== 'string' || !result.text.trim()) throw new TypeError(`command "${def.name}" error text must be a non-empty string`)
    } else throw new TypeError(`command "${def.name}" handler must return a CommandResult`)
    return { commandId, result }
  }
}

/** A DSH Session-like object. */
export function fakeSession (id = 'session-11111111-2222-4333-8444-555555555555', cwd = '/home/dev/app', depth) {
  const header = { version: 0, id, createdAt: 1795977438816, cwd }
  if (depth) header.delegationDepth = depth
  return { id, header }
}

/**
 * A DSH Session-like object with the session surface of DSH 0.1.0-rc.8
 * (@deepseek-ai/dsh-session): an event log, surface.nodes (the seqs the
 * model sees) and append(type, data, {surfaceOp, sourceEventSeqs}) with
 * DSH's checks on a replace (start and end on the surface, every shadowed
 * node cited). compact(start, end) shadows a range with a summary, as
 * DSH's compaction does; messages() is what the next model request holds.
 */
export function dshSession (id = 'session-11111111-2222-4333-8444-555555555555', cwd = '/home/dev/app', events = []) {
  const log = []
  const nodes = []
  const session = {
    id,
    header: { version: 0, id, createdAt: 1795977438816, cwd },
    get events () { return Object.freeze([...log]) },
    surface: { get nodes () { return Object.freeze([...nodes]) } },
    append (type, data, opts = {}) {
      const op = opts.surfaceOp
      const surfaceType = ['user/message', 'assistant/message', 'tool/result', 'compaction/summary'].includes(type)
      if (surfaceType && op === undefined) throw new Error(`session event "${type}" is surface-eligible and requires a surfaceOp marker`)
      const seq = log.length
      if (op && op !== 'append') {
        const a = nodes.indexOf(op.start)
        const b = nodes.indexOf(op.end)
        if (op.op !== 'replace' || a === -1 || b === -1 || a > b) throw new Error(`surface replace: ${JSON.stringify(op)} not on the surface`)
        const shadowed = nodes.slice(a, b + 1)
        const missing = shadowed.filter(n => !(opts.sourceEventSeqs ?? []).includes(n))
        if (missing.length) throw new Error(`surface replace: sourceEventSeqs must include every shadowed surface node; missing ${missing.join(', ')}`)
        nodes.splice(a, b - a + 1, seq)
      } else if (op === 'append') {
        nodes.push(seq)
      }
      const event = JSON.parse(JSON.stringify({ type, seq, time: 0, data, ...opts }))
      log.push(event)
      return event
    },
    compact (start, end, summary = 'summary of the earlier turns') {
      const a = nodes.indexOf(start)
      const b = nodes.indexOf(end)
      return session.append('compaction/summary', { text: summary }, { surfaceOp: { op: 'replace', start, end }, sourceEventSeqs: nodes.slice(a, b + 1) })
    },
    messages () {
      return nodes.map(n => log[n]).map(e => e.data)
    }
  }
  // A resumed session: its earlier process's log replayed.
  for (const e of events) session.append(e.type, e.data, { surfaceOp: e.surfaceOp, sourceEventSeqs: e.sourceEventSeqs })
  return session
}

/** A DSH Agent-like object for a session. */
export function fakeAgent (session = fakeSession()) {
  return { id: session.id, session }
}

/** A pre-step payload. */
export function preStep (agent, step = 1) {
  return { agent, messages: [], turn: 1, step, signal: new AbortController().signal }
}

const delay = ms => new Promise(resolve => setTimeout(resolve, ms))

/**
 * How long until() polls before it gives up: a net for a test that would
 * otherwise hang, not a bound anything is expected to meet, so a busy
 * machine makes a test slower, never red. MULL_TEST_NODE_PATIENCE_MS
 * overrides it.
 */
const PATIENCE_MS = Number(process.env.MULL_TEST_NODE_PATIENCE_MS) || 120000

/** Polls cond until it holds; fails only after PATIENCE_MS. */
export async function until (cond, what = 'condition') {
  const end = Date.now() + PATIENCE_MS
  while (!cond()) {
    if (Date.now() > end) throw new Error(`${what}: still not so after ${PATIENCE_MS} ms`)
    await delay(5)
  }
}

const here = dirname(fileURLToPath(import.meta.url))

/**
 * The session logs of the shared DSH fixtures (real DSH runs) as
 * {header, rows}: the plain .jsonl ones, and the .zstd ones when the zstd
 * command is installed. [] when ../shared is not there.
 */
export function fixtureLogs () {
  const home = join(here, '..', '..', '..', '..', 'shared', 'fixtures', 'dsh', 'home', 'sessions')
  if (!existsSync(home)) return []
  const out = []
  for (const project of readdirSync(home)) {
    for (const sid of readdirSync(join(home, project))) {
      const file = join(home, project, sid, 'session.jsonl')
      let text
      if (existsSync(file)) text = readFileSync(file, 'utf8')
      else {
        const z = spawnSync('zstd', ['-dc', file + '.zstd'], { encoding: 'utf8', maxBuffer: 64 << 20 })
        if (z.status !== 0) continue
        text = z.stdout
      }
      const lines = text.split('\n').filter(Boolean).map(l => JSON.parse(l))
      out.push({ header: lines[0], rows: lines.slice(1) })
    }
  }
  return out
}
