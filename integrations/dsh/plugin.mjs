// mull's DSH bridge: a Cordis plugin that forwards what happens in DSH
// sessions to mull (POST /v1/events), injects mull's memory digest as a
// system-prompt section, adds new memory notices to each step, and gives the
// agent the remember, memory_search and playbook_use tools, and the task
// tools (task_start, task_end, task_reflect, lessons_lookup) with a fixed
// task-boundary hint in the system prompt; it asks mull's negative
// ledger before a tracked tool runs and tells it how the call ended; and it
// brings mull's refined harness (seed 004) in: the projection as a per-step
// message when it changes, mull's skills as DSH skill bundles, and the
// harness_refine, harness_wrapup and harness_benchmark tools; and it lets
// the agent and the person steer mull (issue 16): the memory_status,
// memory_config and memory_proposal tools (selfip_* aliases) and, where DSH
// has the commands capability, the /memory, /forget, /retro, /promote,
// /proposals and /mull (/selfip) slash commands. With
// benchSnapshot set it is a benchmark cell's plugin instead: it serves that
// one snapshot (lib/bench.mjs) and nothing live.
//
// Plain ESM, no dependencies: global fetch and node: built-ins only. It
// never blocks or breaks the agent: handlers return at once, network calls
// run in the background with short timeouts, and when mull is down the
// plugin logs one line and carries on without it. See README.md.

import { normalizeConfig } from './lib/config.mjs'
import { Bridge } from './lib/bridge.mjs'
import { loadDefineTool } from './lib/tools.mjs'
import { TASK_HINT } from './lib/tasks.mjs'
import { BenchCell } from './lib/bench.mjs'

export const name = 'mull'
export const inject = ['tools', 'systemPrompt']

/**
 * Cordis entry. Resolves, after the tools are registered, to the disposer
 * that flushes queued events (bounded by timeoutMs) when DSH unloads it.
 * The third argument is for tests: {clock} replaces the real one
 * (lib/clock.mjs).
 */
export async function apply (ctx, config, { clock, harnessTiming, benchTiming } = {}) {
  const log = makeLog(ctx, config?.logTo)
  const bridge = createBridge(ctx, config, { log, clock, harnessTiming, benchTiming })
  // Before any await: Cordis starts the commands' child fiber while this
  // plugin's own fiber is loading.
  if (bridge.config.commands && !(bridge instanceof BenchCell)) registerCommands(ctx, bridge.commandSpecs(), log)
  // A benchmark cell has no tool: each would read or write live state.
  if (bridge.config.tools && !(bridge instanceof BenchCell)) {
    const defineTool = await loadDefineTool(bridge.config.dshToolsModule)
    const registered = registerTools(ctx, bridge, defineTool, log)
    if (bridge.config.taskHints && registered.includes('task_start')) addTaskHint(ctx, bridge.config)
  }
  return () => bridge.close()
}

/**
 * The task-boundary hint: one fixed section, just before the memory
 * section. Its text is a constant, so it never changes between turns and
 * never costs the model's cached prompt prefix. Only with the task tools:
 * a hint naming tools the agent lacks would only mislead it.
 */
export function addTaskHint (ctx, config) {
  ctx.systemPrompt.section({ name: `${config.section.name}-tasks`, order: config.section.order - 1, text: TASK_HINT })
}

/**
 * Builds the bridge and attaches it to ctx: everything apply does except
 * the tools. Tests call it with a fake ctx and a fake mull. With
 * benchSnapshot set it builds a benchmark cell instead (createBenchCell).
 * @returns {Bridge | BenchCell}
 */
export function createBridge (ctx, rawConfig, { log = makeLog(ctx, rawConfig?.logTo), fetch, workspace, backoff, clock, harnessTiming, benchTiming } = {}) {
  const config = normalizeConfig(rawConfig, msg => log('warn', msg))
  if (config.benchSnapshot) return createBenchCell(ctx, config, { log, fetch, backoff, clock, timing: benchTiming })
  const bridge = new Bridge({ config, log, pluginName: name, fetch, workspace, backoff, clock, harnessTiming })
  ctx.on('agent/session-start', payload => bridge.onSessionStart(payload))
  ctx.on('session/event', (session, event) => bridge.onSessionEvent(session, event))
  ctx.on('agent/error', payload => bridge.onAgentError(payload))
  ctx.on('domain/changed', change => bridge.onDomainChanged(change))
  ctx.on('agent/pre-step', (payload, next) => bridge.onPreStep(payload, next))
  if (!bridge.ledger.disabled) {
    // The negative ledger (lib/ledger.mjs): ledger.mode off makes no call.
    ctx.on('tools/pre-execute', (exec, next) => bridge.ledger.preExecute(exec, next))
    ctx.on('tools/post-execute', (exec, result, next) => bridge.ledger.postExecute(exec, result, next))
    ctx.on('fs/observed', (target, observation, actor) => bridge.ledger.onFsObserved(target, observation, actor))
  }
  ctx.systemPrompt.section({
    name: config.section.name,
    order: config.section.order,
    text: assembleContext => bridge.sectionText(assembleContext)
  })
  bridge.start()
  return bridge
}

/**
 * A benchmark cell's plugin (lib/bench.mjs): the side's snapshot as the
 * memory section (a memory snapshot) or as the harness block (a harness
 * snapshot), and nothing else: no event, digest, notice, projection,
 * skill, ledger or tool, since each would read or write live state and the
 * cell must see exactly its snapshot. Its first step waits for the
 * snapshot and fails without it.
 * @returns {BenchCell}
 */
export function createBenchCell (ctx, config, { log, fetch, backoff, clock, timing } = {}) {
  const cell = new BenchCell({ config, log, pluginName: name, fetch, backoff, clock, timing })
  ctx.on('agent/pre-step', (payload, next) => cell.onPreStep(payload, next))
  ctx.systemPrompt.section({ name: config.section.name, order: config.section.order, text: () => cell.sectionText() })
  cell.start()
  return cell
}

/**
 * Registers the tools through DSH's defineTool. The specs are plain
 * objects (lib/tools.mjs, lib/tasks.mjs); without defineTool they are left
 * out, with one line logged, and the rest of the plugin works as usual.
 * @returns {string[]} the names of the tools registered
 */
export function registerTools (ctx, bridge, defineTool, log) {
  const specs = bridge.toolSpecs()
  if (typeof defineTool !== 'function') {
    log('warn', `mull plugin: cannot load defineTool from @deepseek-ai/dsh-tools, so the ${names(specs)} tools are not registered, nor the task-boundary hint (set dshToolsModule in the plugin config to its path)`)
    return []
  }
  const registered = []
  for (const spec of specs) {
    try {
      ctx.tools.register(defineTool(spec))
      registered.push(spec.name)
    } catch (err) {
      log('warn', `mull plugin: tool ${spec.name} not registered: ${err?.message ?? err}`)
    }
  }
  return registered
}

/**
 * Registers the slash commands (lib/commands.mjs) through DSH's commands
 * capability (@deepseek-ai/dsh-commands, ctx.commands.register), where the
 * host has it. Under Cordis the capability is an optional dependency: a
 * child fiber injecting 'commands' registers them whenever the service is
 * there (and again after it reloads; Cordis undoes each registration with
 * the fiber), and once DSH's loader has settled without it, one line says
 * the commands are skipped. A plain ctx (tests) is read directly.
 */
export function registerCommands (ctx, defs, log) {
  const missing = () => log('info', `mull plugin: this DSH has no commands capability (@deepseek-ai/dsh-commands), so the ${names(defs.map(d => ({ name: '/' + d.name })))} commands are not registered; the tools work as usual`)
  const install = commands => {
    for (const def of defs) {
      try {
        commands.register(def)
      } catch (err) {
        log('warn', `mull plugin: command /${def.name} not registered: ${err?.message ?? err}`)
      }
    }
  }
  try {
    if (typeof ctx.inject === 'function' && typeof ctx.get === 'function') {
      let seen = false
      ctx.inject(['commands'], sub => { seen = true; install(sub.commands) })
      loaded(ctx).then(() => { if (!seen) missing() }).catch(() => {})
      return
    }
    const commands = ctx.commands
    if (typeof commands?.register === 'function') return install(commands)
  } catch (err) {
    log('warn', `mull plugin: the slash commands are not registered: ${err?.message ?? err}`)
    return
  }
  missing()
}

/** Resolves once DSH's loader has settled (at once without one). Never rejects. */
async function loaded (ctx) {
  try {
    await ctx.get('loader')?.await?.()
  } catch {}
}

const names = specs => {
  const n = specs.map(s => s.name)
  return n.length > 1 ? `${n.slice(0, -1).join(', ')} and ${n.at(-1)}` : n.join('')
}

/**
 * A log function: DSH's own logger (ctx.logger, where DSH routes plugin
 * logs) by default, or stderr with logTo "stderr" (headless runs keep
 * ctx.logger's lines in memory only).
 */
function makeLog (ctx, logTo) {
  let logger
  if (logTo !== 'stderr') {
    try {
      logger = typeof ctx.logger === 'function' ? ctx.logger('mull') : ctx.logger
    } catch {}
  }
  return (level, msg) => {
    try {
      const fn = logger?.[level]
      // '%s' first: Cordis' logger formats %-placeholders in its first argument.
      if (typeof fn === 'function') return void fn.call(logger, '%s', msg)
    } catch {}
    try { process.stderr.write(`[mull] ${level}: ${msg}\n`) } catch {}
  }
}
