// The fake mull's benchmark routes (seed 004), in memory: POST
// /v1/harness/benchmark {session, action, …} as the contract shapes it
// (the seed's argument names, unknown fields refused, the seed's output
// names, errors {error, code} with the seed's benchmark:<action>:<code>),
// and GET /v1/bench/snapshots/{id}/inject → {text, etag, kind}. Only what
// the plugin sees: a run is started (202, running) and its progress is
// whatever a test puts in `runs`; no cell runs here.

import { createHash } from 'node:crypto'

const FIELDS = ['session', 'action', 'case_id', 'title', 'statement', 'rubric', 'capability', 'snapshot_id', 'reference_snapshot_id', 'refinement_id', 'runs', 'run_id']
const ACTIONS = ['new', 'add-case', 'freeze', 'capture-reference', 'status', 'run']

export class FakeBench {
  constructor () {
    /** id → the seed's case output {id, title, statement, rubric, capability?, state, created_at, frozen_at?}. */
    this.cases = new Map()
    /** id → {snapshot_id, state_hash, captured_at, refinement_id?, kind, text}: what capture-reference stored, or a test put. */
    this.snapshots = new Map()
    /** Refinement ids a run may name. */
    this.refinements = new Set()
    /** refinement id → the candidate-delta reason a run of it is refused with. */
    this.deltaRefusals = new Map()
    /** run id → what status with that run_id answers (the seed's names plus mull's progress). */
    this.runs = new Map()
    this.maxRuns = 3
    this.nextRun = 1
    /** The text capture-reference stores for a session's merged harness (a test sets it). */
    this.overview = '# Continual Harness State\n## memory (0)\n- none'
  }

  /** POST /v1/harness/benchmark: [status, body]. */
  handle (body, known) {
    if (!body || typeof body !== 'object' || Array.isArray(body)) return [400, { error: 'invalid JSON body', field: '' }]
    for (const k of Object.keys(body)) if (!FIELDS.includes(k)) return [400, { error: `invalid JSON body: unknown field "${k}"`, field: k }]
    for (const k of FIELDS) {
      const v = body[k]
      if (v === undefined) continue
      if (k === 'runs' ? !Number.isInteger(v) : typeof v !== 'string') return [400, { error: `${k}: want ${k === 'runs' ? 'an integer' : 'a string'}`, field: k }]
    }
    if (typeof body.session !== 'string' || !body.session) return [400, { error: 'session: required', field: 'session' }]
    if (!known.has(body.session)) return [404, { error: `unknown session ${body.session}`, field: 'session' }]
    if (!ACTIONS.includes(body.action)) return coded(400, `benchmark:unknown-action`, `unknown action: ${body.action}`)
    return this[camel(body.action)](body)
  }

  new () {
    return [200, { action: 'new', ok: true }]
  }

  addCase (b) {
    if (!b.case_id || !b.title || !b.statement || !b.rubric) return coded(400, 'benchmark:add-case:missing-argument', 'add-case requires case_id, title, statement, and rubric')
    if (this.cases.has(b.case_id)) return coded(409, 'benchmark:add-case:duplicate-id', `benchmark case id already exists: ${b.case_id}`)
    const c = { id: b.case_id, title: b.title, statement: b.statement, rubric: b.rubric, ...(b.capability ? { capability: b.capability } : {}), state: 'draft', created_at: '2026-12-06T04:00:00Z' }
    this.cases.set(c.id, c)
    return [201, { action: 'add-case', ok: true, case: c }]
  }

  freeze (b) {
    const c = this.cases.get(b.case_id)
    if (!c) return coded(404, 'benchmark:freeze:not-found', `no benchmark case with id: ${b.case_id}`)
    if (c.state !== 'draft') return coded(409, 'benchmark:freeze:not-draft', `benchmark case is not in draft state: ${b.case_id}`)
    c.state = 'frozen'
    c.frozen_at = '2026-12-06T04:01:00Z'
    return [200, { action: 'freeze', ok: true, case: c }]
  }

  captureReference (b) {
    if (!b.snapshot_id) return coded(400, 'benchmark:capture-reference:missing-argument', 'capture-reference requires snapshot_id')
    if (this.snapshots.has(b.snapshot_id)) return coded(409, 'benchmark:capture-reference:duplicate-id', `snapshot id already exists: ${b.snapshot_id}`)
    const s = { snapshot_id: b.snapshot_id, state_hash: sha(this.overview), captured_at: '2026-12-06T04:02:00Z', kind: 'harness', text: this.overview }
    this.snapshots.set(s.snapshot_id, s)
    return [201, { action: 'capture-reference', ok: true, snapshot_id: s.snapshot_id, state_hash: s.state_hash, captured_at: s.captured_at }]
  }

  status (b) {
    if (b.run_id) {
      const r = this.runs.get(b.run_id)
      if (!r) return coded(404, 'benchmark:status:not-found', `no benchmark run with id: ${b.run_id}`)
      return [200, { action: 'status', ok: true, ...r }]
    }
    return [200, {
      action: 'status',
      ok: true,
      cases: [...this.cases.values()].map(c => ({ id: c.id, title: c.title, state: c.state })),
      snapshots: [...this.snapshots.values()].map(s => ({
        snapshot_id: s.snapshot_id, ...(s.refinement_id ? { refinement_id: s.refinement_id } : {}), captured_at: s.captured_at, state_hash: s.state_hash
      })),
      recent_runs: [...this.runs.values()].filter(r => r.status === 'ACCEPTED' || r.status === 'REJECTED').map(r => ({
        run_id: r.run_id, refinement_id: r.refinement_id, status: r.status, reference_overall: r.reference_overall ?? null, candidate_overall: r.candidate_overall ?? null, created_at: '2026-12-06T04:03:00Z'
      }))
    }]
  }

  run (b) {
    if (!b.reference_snapshot_id || !b.refinement_id) return coded(400, 'benchmark:run:missing-argument', 'run requires reference_snapshot_id and refinement_id')
    const runs = b.runs ?? 1
    if (runs < 1) return coded(400, 'benchmark:run:runs-invalid', 'runs must be a positive integer')
    if (runs > this.maxRuns) return coded(400, 'benchmark:run:runs-exceeds-max', `runs (${runs}) exceeds maxRuns (${this.maxRuns})`)
    const frozen = [...this.cases.values()].filter(c => c.state === 'frozen')
    if (frozen.length === 0) return coded(409, 'benchmark:run:no-frozen-cases', 'run requires at least one frozen benchmark case')
    if (!this.snapshots.has(b.reference_snapshot_id)) return coded(404, 'benchmark:run:no-reference', `reference snapshot not found: ${b.reference_snapshot_id}`)
    if (!this.refinements.has(b.refinement_id)) return coded(404, 'benchmark:run:refinement-not-found', `no refinement with id ${b.refinement_id} in the store history`)
    const reason = this.deltaRefusals.get(b.refinement_id)
    if (reason) {
      // mull's DeltaError text carries its code already (bench.DeltaError.Error).
      return [409, { error: `benchmark:run:candidate-delta: candidate is not reference plus the single refinement ${b.refinement_id}: ${reason}`, code: 'benchmark:run:candidate-delta', reason }]
    }
    const id = `bench_${String(this.nextRun++).padStart(8, '0')}`
    const cells = frozen.length * 2 * runs
    this.runs.set(id, { run_id: id, refinement_id: b.refinement_id, status: 'running', cells_total: cells, cells_done: 0, cells_failed: 0, decision: null })
    return [202, { action: 'run', ok: true, run_id: id, refinement_id: b.refinement_id, status: 'running', runs, cells }]
  }

  /** GET /v1/bench/snapshots/{id}/inject: [status, body, headers]. */
  inject (id) {
    const s = this.snapshots.get(id)
    if (!s) return [404, { error: `no snapshot ${id}` }]
    const etag = `"${s.state_hash.slice(0, 16)}"`
    return [200, { text: s.text, etag, ...(s.kind ? { kind: s.kind } : {}), ...(s.withheld ? { withheld: true } : {}) }, { etag }]
  }
}

/** An error as the contract's API answers one: {error (the message, without its code), code}. */
function coded (status, code, error) {
  return [status, { error, code }]
}

const camel = s => s.replace(/-(\w)/g, (_, c) => c.toUpperCase())
const sha = text => createHash('sha256').update(text).digest('hex')
