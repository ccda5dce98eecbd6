// The task tools of the dsh-lessons seed (000): task_start, task_end,
// task_reflect and lessons_lookup, as plain defineTool options like the
// memory tools (lib/tools.mjs). They are bookkeeping around the agent's real
// work, so none of them ever throws: mull down, a refusal or a bad argument
// comes back as a result that says what happened and what to do, and the
// agent's turn goes on.

export const TASK_STATUSES = ['succeeded', 'failed', 'abandoned', 'aborted']
export const RELATIONS = ['new', 'repeat', 'revise', 'none']
export const LESSON_KINDS = ['lesson', 'directive', 'failure']
export const LESSON_SCOPES = ['global', 'workspace', 'session', 'reflection']
export const CONFIDENCES = ['low', 'medium', 'high']
export const CONFLICT_KINDS = ['condition', 'goal', 'contradiction', 'apparent']

/**
 * The task-boundary hint, a fixed system-prompt section (config taskHints).
 * It never changes, so it never invalidates the model's cached prompt.
 */
export const TASK_HINT = [
  '## Task boundaries (mull)',
  'When you begin a task, call task_start as its first action, before anything else, with the goal and the expected result.',
  'When its result is known, call task_end with the task_id task_start gave you and the status: succeeded, failed, abandoned or aborted.',
  'When task_end returns reflection material, reflect on it as it says and call task_reflect.',
  'A quick question or a chat is not a task.'
].join('\n')

const text = s => [{ type: 'text', text: s }]
const ANY = { schema: { type: 'object', additionalProperties: true } }
const str = v => typeof v === 'string' ? v.trim() : ''
const idOf = v => typeof v === 'string' ? v.trim() : Number.isInteger(v) ? String(v) : ''

/** A lesson id or task id: mull's lesson ids are integers, the model may quote them. */
const ID = (description) => ({ oneOf: [{ type: 'integer' }, { type: 'string' }], description })

/** One lesson of task_reflect, the fields of mull's reflection schema (learn/reflect). */
const LESSON_SCHEMA = {
  type: 'object',
  additionalProperties: true,
  properties: {
    relation: {
      type: 'string',
      enum: RELATIONS,
      required: true,
      description: 'new: not known before; repeat: an existing lesson happened again (adds evidence only, give target_id); ' +
        'revise: corrects an existing lesson, which stops being injected (give target_id and evidence_task_ids); none: nothing new, nothing stored.'
    },
    kind: { type: 'string', enum: LESSON_KINDS, description: 'lesson (a heuristic to weigh, the default), directive (a required method), failure (an action to avoid: a constraint).' },
    scope: { type: 'string', enum: LESSON_SCOPES, description: 'Who sees it: global, workspace (this workspace), session (a named session), reflection (this session, the default).' },
    problem: { type: 'string', description: 'What happened: the observable phenomenon, without what should have been done.' },
    attempted: { type: 'string', description: 'What was done then, without judging it.' },
    correction: { type: 'string', description: 'What to do instead; required for lesson and directive, never narrower than problem.' },
    applies_when: { type: 'string', description: 'When the lesson applies (its trigger).' },
    confidence: { type: 'string', enum: CONFIDENCES, description: 'Your own rating.' },
    avoid: { type: 'string', description: 'failure only, required: what not to do.' },
    instead: { type: 'string', description: 'failure only, optional: a known alternative.' },
    boundary: { type: 'string', description: 'Why it belongs to its scope; required outside the reflection scope.' },
    target_id: ID('repeat and revise: the id of the lesson this one repeats or revises.'),
    evidence_task_ids: {
      type: 'array',
      items: { type: 'string' },
      description: 'revise: closed tasks that did not succeed and had the challenged lesson in force when they started.'
    },
    conflicts: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: true,
        properties: {
          with: ID('The other lesson.'),
          kind: { type: 'string', enum: CONFLICT_KINDS },
          note: { type: 'string' }
        }
      },
      description: 'Declared tensions with other lessons; shown side by side, never resolved by mull.'
    },
    critique: { type: 'json', description: 'The adversarial review of this lesson, when mull asks for one.' }
  }
}

/**
 * The task tools' defineTool options.
 * @param {object} o
 * @param {import('./client.mjs').MullClient} o.client
 * @param {(agent: any) => {workspace: string, session?: string}} o.where - the workspace and session of a call
 * @param {(agent: any) => Promise<void>} [o.sendQueued] - sends the events queued so far (bounded), so a
 *   task's boundary falls after what happened before it
 */
export function taskToolSpecs ({ client, where, sendQueued = async () => {} }) {
  const taskStart = {
    name: 'task_start',
    description: 'Open a task in mull: call it as the first action of a task, with its goal and the result you expect. ' +
      'mull records the lessons in force now as the task\'s decision environment. Returns the task_id for task_end.',
    parameters: {
      goal: { type: 'string', description: 'What the task is to achieve.', required: true },
      expected_result: { type: 'string', description: 'What the result should look like when it is done.', required: true }
    },
    output: {
      ...ANY,
      render: (_args, v) => text(v.recorded
        ? `Task ${v.task_id} started${environment(v.environment)}. When its result is known, call task_end with task_id "${v.task_id}".`
        : `Task not recorded: ${v.reason}. Carry on with the work; there is no task to end.`)
    },
    async execute (args, exec) {
      const no = reason => ({ recorded: false, reason })
      const goal = str(args?.goal)
      const expected = str(args?.expected_result)
      if (!goal) return no('goal is empty; say what the task is to achieve')
      if (!expected) return no('expected_result is empty; say what the result should look like')
      const { workspace, session } = where(exec?.agent)
      if (!session) return no('this call has no DSH session, and a task belongs to one')
      await sendQueued(exec?.agent)
      const res = await client.request('POST', '/v1/tasks', { body: { session_id: session, workspace, goal, expected_result: expected }, force: true })
      if (res === null) return no('mull is unavailable; the task was not recorded')
      const t = res.body?.task
      if ((res.status === 201 || res.status === 200) && idOf(t?.id)) {
        return { recorded: true, task_id: idOf(t.id), environment: t.environment ?? null }
      }
      return no(refusal(res, 'POST /v1/tasks'))
    }
  }

  const taskEnd = {
    name: 'task_end',
    description: 'Close the task task_start opened, as soon as its result is known: succeeded, failed, abandoned or aborted, ' +
      'with the result in a sentence or two. mull then reflects on the task; when it answers with reflection material, ' +
      'follow it and call task_reflect.',
    parameters: {
      task_id: { type: 'string', description: 'The task_id task_start returned.', required: true },
      status: { type: 'string', enum: TASK_STATUSES, description: 'How the task ended.', required: true },
      result: { type: 'string', description: 'What came of it.', required: true }
    },
    output: { ...ANY, render: (_args, v) => text(renderEnd(v)) },
    async execute (args, exec) {
      const taskId = idOf(args?.task_id)
      const no = reason => ({ closed: false, task_id: taskId, reason })
      if (!taskId) return no('task_id is empty; give the task_id task_start returned')
      if (!TASK_STATUSES.includes(args?.status)) return no(`status must be one of ${TASK_STATUSES.join(', ')}`)
      const result = str(args?.result)
      if (!result) return no('result is empty; say what came of the task')
      await sendQueued(exec?.agent)
      const path = `/v1/tasks/${encodeURIComponent(taskId)}/end`
      const res = await client.request('POST', path, { body: { status: args.status, result }, force: true })
      if (res === null) return no('mull is unavailable; the task was not closed')
      if (res.status !== 200) return no(refusal(res, `POST ${path}`, taskId, 'is already closed'))
      const r = res.body?.reflection ?? {}
      // No undefined field: DSH refuses a tool value that is not lossless JSON.
      return {
        closed: true,
        task_id: taskId,
        status: str(res.body?.task?.status) || args.status,
        mode: str(r.mode),
        ...(Number.isFinite(r.job_id) ? { job_id: r.job_id } : {}),
        material: str(r.material)
      }
    }
  }

  const taskReflect = {
    name: 'task_reflect',
    description: 'Record your reflection on a closed task, as task_end\'s reflection material asks: your assessment, ' +
      'and each lesson with its relation to what mull already holds (new, repeat, revise or none). mull validates it ' +
      'and says, per lesson, whether it was recorded; fix a refused field and call it again.',
    parameters: {
      task_id: { type: 'string', description: 'The task_id of the closed task.', required: true },
      assessment: { type: 'string', description: 'How the task went and why, in your own words.', required: true },
      source: { type: 'string', description: 'Where the lessons came from, in your own words (kept apart from mull\'s own record).' },
      lessons: { type: 'array', items: LESSON_SCHEMA, description: 'The lessons; an empty list when there is nothing to keep.', required: true },
      critique: { type: 'json', description: 'The adversarial review of the whole reflection, when mull asks for one.' }
    },
    output: { ...ANY, render: (_args, v) => text(renderReflect(v)) },
    async execute (args) {
      const taskId = idOf(args?.task_id)
      const no = (reason, field) => ({ recorded: false, task_id: taskId, reason, ...(field ? { field } : {}) })
      if (!taskId) return no('task_id is empty; give the task_id of the closed task', 'task_id')
      const assessment = str(args?.assessment)
      if (!assessment) return no('assessment is empty', 'assessment')
      if (!Array.isArray(args?.lessons)) return no('lessons must be a list (empty when there is nothing to keep)', 'lessons')
      const bad = args.lessons.findIndex(l => !l || typeof l !== 'object' || Array.isArray(l))
      if (bad >= 0) return no(`lessons[${bad}] is not an object`, `lessons[${bad}]`)
      const body = { assessment, lessons: args.lessons }
      if (args.source !== undefined) body.source = args.source
      if (args.critique !== undefined) body.critique = args.critique
      const path = `/v1/tasks/${encodeURIComponent(taskId)}/reflect`
      const res = await client.request('POST', path, { body, force: true })
      if (res === null) return no('mull is unavailable; the reflection was not recorded')
      if (res.status !== 200) {
        const field = typeof res.body?.field === 'string' ? res.body.field : ''
        return no(refusal(res, `POST ${path}`, taskId, 'cannot take a reflection now'), field)
      }
      const results = (Array.isArray(res.body?.results) ? res.body.results : []).map((r, i) => ({
        index: Number.isInteger(r?.index) ? r.index : i,
        relation: str(r?.relation),
        id: idOf(r?.id),
        refused: str(r?.refused)
      }))
      return { recorded: true, task_id: taskId, lessons_recorded: Number(res.body?.lessons_recorded) || 0, results }
    }
  }

  const lessonsLookup = {
    name: 'lessons_lookup',
    description: 'Look up one lesson in full (read-only): its fields, the task it came from (goal, expected result, status, ' +
      'result, timeline) and the other lessons in force when that task started. Use it when a lesson\'s source matters.',
    parameters: {
      lesson_id: { ...ID('The lesson\'s id, as mull shows it.'), required: true }
    },
    isConcurrencySafe: () => true,
    output: { ...ANY, render: (_args, v) => text(v.found ? v.text : `Not found: ${v.reason}`) },
    async execute (args, exec) {
      const id = idOf(args?.lesson_id)
      const no = reason => ({ found: false, lesson_id: id, reason })
      if (!id) return no('lesson_id is empty; give the lesson\'s id as mull shows it')
      const path = `/v1/lessons/${encodeURIComponent(id)}/lookup`
      // who asks: mull shows a lesson only to a session its scope reaches,
      // or one that had it in a task's environment
      const { workspace, session } = where(exec?.agent)
      const query = session ? { workspace, session } : { workspace }
      const res = await client.request('GET', path, { query, force: true })
      if (res === null) return no('mull is unavailable; the lesson cannot be looked up now')
      if (res.status === 200 && typeof res.body?.text === 'string') return { found: true, lesson_id: id, text: res.body.text }
      if (res.status === 404 && res.body?.error) return no(`mull has no lesson ${id} (${res.body.error})`)
      return no(refusal(res, `GET ${path}`))
    }
  }

  return [taskStart, taskEnd, taskReflect, lessonsLookup]
}

function environment (env) {
  const n = Number(env?.count)
  if (!Number.isInteger(n) || n < 0) return ''
  if (n === 0) return ' (no lessons were in force)'
  return ` (${n} lesson${n === 1 ? '' : 's'} in force recorded as its decision environment${env.truncated ? ', the first 12 in full' : ''})`
}

function renderEnd (v) {
  if (!v.closed) return `Task not closed: ${v.reason}.`
  const head = `Task ${v.task_id} closed (${v.status}).`
  if (v.material && v.mode !== 'job') return `${head}\n\n${v.material}`
  if (v.mode === 'agent') return `${head} mull sent no reflection material, so there is nothing to reflect on.`
  return `${head} mull reflects on it in the background${'job_id' in v ? ` (job ${v.job_id})` : ''}; nothing more is needed.`
}

function renderReflect (v) {
  if (!v.recorded) {
    return `Reflection not recorded: ${v.reason}.` + (v.field ? ` Fix ${v.field} and call task_reflect again.` : '')
  }
  const lines = v.results.map(r => {
    const what = r.refused ? `refused, ${r.refused}` : r.id ? `recorded as lesson ${r.id}` : 'nothing stored'
    return `- lessons[${r.index}]${r.relation ? ` (${r.relation})` : ''}: ${what}`
  })
  const refused = v.results.some(r => r.refused)
  return [`Reflection on ${v.task_id} recorded: ${v.lessons_recorded} lesson${v.lessons_recorded === 1 ? '' : 's'} recorded.`, ...lines]
    .join('\n') + (refused ? '\nA refused lesson can be fixed and sent again in a new task_reflect call.' : '')
}

/**
 * What a non-success answer means, in one line: mull's error (and field),
 * else the route missing on an older mull.
 */
function refusal (res, route, taskId, conflict) {
  const b = res.body ?? {}
  const err = typeof b.error === 'string' && b.error ? b.error : ''
  const field = typeof b.field === 'string' && b.field ? b.field : ''
  if (!err) {
    if (res.status === 404 || res.status === 405) return `this mull does not serve ${route} (HTTP ${res.status}); it may be older than the task tools`
    return `mull answered HTTP ${res.status} to ${route}`
  }
  const said = field && !err.startsWith(field) ? `${field}: ${err}` : err
  if (res.status === 404 && taskId) return `mull has no task "${taskId}" (${said}); use the task_id task_start returned`
  if (res.status === 409 && taskId) return `task ${taskId} ${conflict} (${said})`
  return `mull refused it (HTTP ${res.status}): ${said}`
}
