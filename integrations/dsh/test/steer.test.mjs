// Steering mull from inside DSH (issue 16): the memory_status,
// memory_config and memory_proposal tools with the seed's selfip_* names,
// and the slash commands through DSH's commands capability, against the
// fake mull's steering routes (testkit/fake-steer.mjs): success, mull down
// or hanging (a readable answer, never a throw), mull's refusals shown in
// its words, an older mull without the routes, and a host without the
// commands capability.

import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'

import * as plugin from '../plugin.mjs'
import { FakeMull } from '../testkit/fake-mull.mjs'
import { FakeCtx, fakeAgent, fakeSession, until } from '../testkit/helpers.mjs'
import { TestClock } from '../testkit/clock.mjs'

const STUB = fileURLToPath(new URL('../testkit/stub-dsh-tools.mjs', import.meta.url))
const WS = '/home/dev/shop'

async function setup (t, config = {}, ctx = new FakeCtx()) {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  const clock = new TestClock()
  const dispose = await plugin.apply(ctx, { baseUrl: fake.url, dshToolsModule: STUB, flushMs: 5, ...config }, { clock })
  t.after(() => { const d = dispose(); clock.expire(); return d })
  const agent = fakeAgent(fakeSession('session-steer', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  const tool = name => ctx.registered.find(d => d.name === name)
  const call = (name, args = {}) => tool(name).execute(args, { agent })
  const run = line => ctx.commands.execute(agent, line, [], new AbortController().signal).then(x => x?.result)
  const render = (name, v) => tool(name).output.render({}, v)[0].text
  return { fake, ctx, clock, agent, tool, call, run, render }
}

test('memory_status: mull\'s counts per library, queue, budget and errors, merged with the bridge\'s own counters', async (t) => {
  const { fake, call, render } = await setup(t)
  fake.addMemory(WS, 'lesson', 'Run make lint before a commit.')
  fake.addMemory(WS, 'fact', 'The API lives in server/api.ts.')
  fake.addMemory(WS, 'fact', 'Deploys go through ship.sh.')
  fake.steer.scopes.set(WS, 'both')
  fake.addMemory('', 'preference', 'Answer in English.', { library: 'global' })
  const v = await call('memory_status')
  assert.equal(v.ok, true)
  const text = render('memory_status', v)
  assert.equal(text, v.text)
  assert.match(text, /^mull memory for \/home\/dev\/shop \(scope both\):/)
  assert.match(text, /- workspace library: 3 live \(live by kind: lesson 1, fact 2\); quarantined 0, redacted 0/)
  assert.match(text, /- global library: 1 live \(live by kind: preference 1\)/)
  assert.match(text, /last retro never, last consolidation never, last error never/)
  assert.match(text, /- jobs: 0 waiting, 0 running, 0 to retry, 0 dead/)
  assert.match(text, /- budget workspace:\/home\/dev\/shop: 1200 of 400000 tokens spent, 398800 left/)
  assert.match(text, /- mull's read errors 0, write errors 0/)
  assert.match(text, /bridge \(this DSH's plugin\): mull at http:\/\/127\.0\.0\.1:\d+ reachable; requests \d+ reads, \d+ writes; errors: read 0, write 0, skipped while down 0/)
  assert.match(text, /events: \d+ waiting to be sent, \d+ sent, 0 dropped \(queue full\), 0 refused by mull/)
  const req = fake.requests.find(r => r.path === '/v1/memory/status')
  assert.deepEqual(req.query, { workspace: WS })
})

test('memory_config: get shows each value and its source and where the config lives; set echoes what becomes hidden', async (t) => {
  const { fake, call } = await setup(t)
  fake.addMemory(WS, 'lesson', 'Run make lint before a commit.')
  fake.addMemory(WS, 'fact', 'The API lives in server/api.ts.')
  const got = await call('memory_config')
  assert.equal(got.ok, true)
  assert.match(got.text, /^mull config for \/home\/dev\/shop:\n- memory\.scope = workspace \(default\)\n- llm\.budget = 400000 \(default\)\nconfig file: \/etc\/mull\/config\.toml\nhow to change: \[workspaces\."\/home\/dev\/shop"\]/)
  assert.equal(fake.requests.find(r => r.path.startsWith('/v1/workspaces/')).path, '/v1/workspaces/%2Fhome%2Fdev%2Fshop/config', 'the workspace is one escaped segment')

  const set = await call('memory_config', { action: 'set', scope: 'global' })
  assert.equal(set.ok, true)
  // mull's message, as it wrote it.
  assert.equal(set.text, 'Scope of /home/dev/shop: workspace → global (from the next digest and search; no restart). ' +
    'Hidden now: this workspace\'s own library, 2 live memories; they leave the injected digest and search at once. ' +
    'To see them again, switch back: /mull scope workspace or both (or PUT the scope). No data was moved or deleted: switching scope changes only what is read.')
  const put = fake.requests.find(r => r.method === 'PUT')
  assert.deepEqual(put.body, { scope: 'global' })
  // scope alone means set
  assert.match((await call('memory_config', { scope: 'both' })).text, /^Scope of \/home\/dev\/shop: global → both/)
  // checked before anything is sent
  const puts = fake.requests.filter(r => r.method === 'PUT').length
  assert.deepEqual(await call('memory_config', { action: 'set', scope: 'team' }), { ok: false, text: 'scope must be one of workspace, global, both; got "team"' })
  assert.deepEqual(await call('memory_config', { action: 'set' }), { ok: false, text: 'scope must be one of workspace, global, both; got ""' })
  assert.equal(fake.requests.filter(r => r.method === 'PUT').length, puts)
  // env pins the scope: stored, but said (mull's message says it; the note only when it does not)
  fake.steer.envScope = 'workspace'
  const pinned = await call('memory_config', { scope: 'global' })
  assert.match(pinned.text, /^Stored scope "global" for \/home\/dev\/shop, but MULL_MEMORY_SCOPE is set and wins\./)
  assert.doesNotMatch(pinned.text, /Note:/)
  // An answer without a message: the switch and the hidden layers from its fields.
  fake.steer.fail.set('PUT /v1/workspaces/{ws}/config', [200, {
    workspace: WS, scope: { from: 'both', to: 'workspace', source: 'workspace (api)' }, hidden: [{ library: 'global', count: 3, by_kind: { fact: 3 } }], overridden_by_env: true
  }])
  assert.equal((await call('memory_config', { scope: 'workspace' })).text, 'Scope of /home/dev/shop: both → workspace (workspace (api)).\n' +
    'Hidden now: the global library, 3 items; no data moved, /mull scope both shows them again.\n' +
    'Note: an environment variable pins the scope, so it wins over this setting until it is unset.')
})

test('memory_proposal: list, and mull\'s 403 shown in its words unless agent_may_decide; accept and reject when allowed', async (t) => {
  const { fake, call } = await setup(t)
  fake.steer.addProposal(WS, 'Add a lint step to the release playbook')
  fake.steer.addProposal('/elsewhere', 'not this workspace')
  const list = await call('memory_proposal')
  assert.equal(list.ok, true)
  assert.match(list.text, /^1 pending proposal:\n- p1 \[pending\] \(memory\) Add a lint step to the release playbook — \S+\nA person decides: mull proposals accept ID \| the panel \/proposals \(proposals\.agent_may_decide is false\)\.$/)
  assert.deepEqual(fake.requests.find(r => r.path === '/v1/proposals').query, { workspace: WS, status: 'pending' })

  const refused = await call('memory_proposal', { action: 'accept', id: 'p1', note: 'looks right' })
  assert.deepEqual(refused, { ok: false, text: 'mull refused (HTTP 403): proposals.agent_may_decide is false: a person decides with `mull proposals accept|reject ID` or the panel\'s /proposals' })
  assert.deepEqual(fake.requests.find(r => r.path === '/v1/proposals/p1/accept').body, { note: 'looks right' })

  fake.steer.agentMayDecide = true
  assert.deepEqual(await call('memory_proposal', { action: 'reject', id: 'p1' }), { ok: false, text: 'reject needs a note saying why (mull keeps it as a lesson)' })
  assert.deepEqual(await call('memory_proposal', { action: 'accept', id: 'p1', note: 'ok' }), { ok: true, text: 'Proposal p1 accepted (status accepted), note: ok.' })
  assert.deepEqual(await call('memory_proposal', { action: 'accept', id: 'p1' }), { ok: false, text: 'mull refused (HTTP 409): proposal p1 is not pending (accepted)' })
  assert.deepEqual(await call('memory_proposal', { action: 'accept', id: 'p9' }), { ok: false, text: 'mull refused (HTTP 404): no proposal p9' })
  assert.match((await call('memory_proposal', { status: 'all' })).text, /^1 proposal:\n- p1 \[accepted\][^\n]*; note: ok\nproposals\.agent_may_decide is true/)
})

test('the seed\'s names selfip_status, selfip_config and selfip_proposal are aliases: the same call, the same answer', async (t) => {
  const { fake, call, tool } = await setup(t)
  fake.addMemory(WS, 'fact', 'The API lives in server/api.ts.')
  fake.steer.addProposal(WS, 'Add a lint step')
  // The bridge's own counters move between two calls; mull's part is the same.
  const strip = v => ({ ...v, text: v.text.split('\nbridge (')[0] })
  assert.deepEqual(strip(await call('selfip_status')), strip(await call('memory_status')))
  assert.deepEqual(await call('selfip_config'), await call('memory_config'))
  assert.deepEqual(await call('selfip_proposal'), await call('memory_proposal'))
  assert.deepEqual(await call('selfip_proposal', { action: 'accept', id: 'p1' }), await call('memory_proposal', { action: 'accept', id: 'p1' }))
  for (const [alias, name] of [['selfip_status', 'memory_status'], ['selfip_config', 'memory_config'], ['selfip_proposal', 'memory_proposal']]) {
    assert.deepEqual(tool(alias).parameters, tool(name).parameters)
    assert.match(tool(alias).description, new RegExp(`The seed's name for ${name}`))
  }
})

test('the steering tools with mull down: a readable answer, never a throw; memory_status still shows the bridge\'s counters', async (t) => {
  const { fake, ctx, call } = await setup(t, { timeoutMs: 200 })
  await fake.stop()
  const status = await call('memory_status')
  assert.equal(status.ok, false)
  assert.match(status.text, /^mull is unavailable at http:\/\/127\.0\.0\.1:\d+ \(connect ECONNREFUSED[^)]*\); the status was not done\.\nbridge \(this DSH's plugin\): mull at \S+ unreachable since \S+; requests \d+ reads, \d+ writes; errors: read [1-9]\d*, write \d+/)
  assert.match(status.text, /last error: GET \/v1\/memory\/status: connect ECONNREFUSED/)
  assert.match((await call('memory_config')).text, /^mull is unavailable at \S+ \(connect ECONNREFUSED[^)]*\); reading the config was not done$/)
  assert.match((await call('selfip_config', { scope: 'global' })).text, /^mull is unavailable at \S+ \(.*\); the switch to scope global was not done$/)
  assert.match((await call('memory_proposal')).text, /^mull is unavailable at \S+ \(.*\); listing the proposals was not done$/)
  assert.match((await call('memory_proposal', { action: 'accept', id: 'p1' })).text, /^mull is unavailable at \S+ \(.*\); the accept of proposal p1 was not done$/)
  const lines = ctx.warnings().map(w => w.msg)
  assert.equal(lines.length, 1, lines.join('\n'))
})

test('the steering tools: mull failing (5xx), hanging past the deadline, or older without the routes', async (t) => {
  const { fake, clock, call } = await setup(t, { timeoutMs: 200 })
  fake.steer.fail.set('GET /v1/memory/status', [500, { error: 'database is locked' }])
  const failed = await call('memory_status')
  assert.match(failed.text, /^mull failed on GET \/v1\/memory\/status \(HTTP 500\); the status was not done\./)
  assert.match(failed.text, /errors: read 1, write 0/)

  fake.mode = 'hang'
  const hung = call('memory_config', { scope: 'global' })
  await until(() => fake.requests.some(r => r.method === 'PUT'), 'the PUT reached the hanging mull')
  await clock.deadlines(1)
  clock.expire()
  assert.deepEqual(await hung, { ok: false, text: 'mull did not answer PUT /v1/workspaces/%2Fhome%2Fdev%2Fshop/config in time; the switch to scope global may or may not have been done: look again before repeating it' })

  fake.mode = 'ok'
  // Go's mux answers an unknown route with a plain-text 404.
  const orig = fake.handle.bind(fake)
  fake.handle = (req, res) => {
    if (!req.url.startsWith('/v1/proposals') && !req.url.startsWith('/v1/workspaces/')) return orig(req, res)
    res.writeHead(404, { 'content-type': 'text/plain' })
    res.end('404 page not found\n')
  }
  assert.deepEqual(await call('memory_proposal'), { ok: false, text: 'this mull does not serve GET /v1/proposals (HTTP 404); it may be older than the steering routes (issue 16), so listing the proposals was not done' })
  assert.match((await call('memory_config', { scope: 'both' })).text, /^this mull does not serve PUT \/v1\/workspaces\/%2Fhome%2Fdev%2Fshop\/config \(HTTP 404\)/)
})

test('the slash commands are registered through the host\'s commands capability', async (t) => {
  const { ctx } = await setup(t)
  assert.deepEqual(ctx.commands.list().map(d => d.name), ['forget', 'memory', 'mull', 'promote', 'proposals', 'retro', 'selfip'])
  assert.deepEqual(ctx.commands.list().find(d => d.name === 'memory').input, { hint: '<keywords>' })
  assert.deepEqual(ctx.warnings(), [])
  assert.equal(ctx.logs.length, 0, JSON.stringify(ctx.logs))
})

test('/memory searches; /forget shows the matches and /forget --yes invalidates exactly those', async (t) => {
  const { fake, run } = await setup(t)
  fake.addMemory(WS, 'fact', 'The staging database is pg-staging-2.')
  fake.addMemory(WS, 'lesson', 'The staging deploy needs VPN.')
  fake.addMemory(WS, 'fact', 'Production runs on pg-main.')
  assert.deepEqual(await run('/memory staging'), { kind: 'success', text: '2 memories matching "staging":\n- m1 (fact) The staging database is pg-staging-2.\n- m2 (lesson) The staging deploy needs VPN.' })
  assert.deepEqual(fake.requests.find(r => r.path === '/v1/memories/search').query, { workspace: WS, session: 'session-steer', q: 'staging', limit: '10' })
  assert.deepEqual(await run('/memory'), { kind: 'error', text: 'Usage: /memory <keywords>' })
  assert.deepEqual(await run('/memory kubernetes'), { kind: 'success', text: 'No memory matches "kubernetes".' })

  assert.deepEqual(await run('/forget --yes'), { kind: 'error', text: 'Nothing to confirm: run /forget <keywords> first to see what it would invalidate.' })
  assert.deepEqual(await run('/forget staging database'), {
    kind: 'success',
    text: '1 memory matches "staging database":\n- m1 (fact, workspace) The staging database is pg-staging-2.\nTo invalidate it (marked invalid, history kept): /forget --yes'
  })
  assert.equal(fake.memories[0].invalid, undefined, 'nothing invalidated by the preview')
  assert.deepEqual(await run('/forget --yes staging deploy'), { kind: 'error', text: 'The last /forget here showed the matches of "staging database", not "staging deploy": run /forget staging deploy first.' })
  assert.deepEqual(await run('/forget --yes staging database'), {
    kind: 'success',
    text: 'Invalidated 1 memory matching "staging database" (m1): they are marked invalid, no longer injected or found, and kept in the history.'
  })
  assert.equal(fake.memories[0].invalidReason, 'forget: staging database')
  assert.equal(fake.memories[1].invalid, undefined)
  const confirm = fake.requests.filter(r => r.path === '/v1/memories/forget').at(-1).body
  assert.deepEqual(Object.keys(confirm).sort(), ['confirm', 'confirm_token', 'keywords', 'workspace'])
  assert.equal(confirm.confirm, true)
  assert.match((await run('/memory staging')).text, /^1 memory matching/)
  assert.equal((await run('/forget --yes')).kind, 'error', 'a confirmation is used once')
})

test('/forget: matches that changed since the preview are not invalidated; the new ones are shown to confirm', async (t) => {
  const { fake, run } = await setup(t)
  fake.addMemory(WS, 'fact', 'The staging database is pg-staging-2.')
  assert.equal((await run('/forget staging')).kind, 'success')
  fake.addMemory(WS, 'lesson', 'The staging deploy needs VPN.')
  const stale = await run('/forget --yes')
  assert.equal(stale.kind, 'error')
  assert.match(stale.text, /^Nothing invalidated: the memories matching "staging" changed since the preview\.\n2 memories match "staging":\n- m1 [^\n]*\n- m2 [^\n]*\nTo invalidate these 2 \(marked invalid, history kept\): \/forget --yes$/)
  assert.equal(fake.memories.filter(m => m.invalid).length, 0)
  assert.equal(fake.requests.filter(r => r.path === '/v1/memories/forget').length, 2, 'the 409 carried the new dry run: no third request')
  assert.match((await run('/forget --yes')).text, /^Invalidated 2 memories matching "staging" \(m1, m2\)/)
})

test('/forget: structured lessons mull keeps are shown as kept', async (t) => {
  const { fake, run } = await setup(t)
  fake.steer.fail.set('POST /v1/memories/forget', [200, {
    matches: [{ id: 4, kind: 'fact', text: 'Staging is pg-2.', library: 'workspace' }],
    count: 1,
    confirm_token: 'tok',
    kept_lessons: [{ id: 9, kind: 'lesson', text: 'Staging needs VPN.', library: 'workspace' }]
  }])
  assert.deepEqual(await run('/forget staging'), {
    kind: 'success',
    text: '1 memory matches "staging":\n- 4 (fact, workspace) Staging is pg-2.\n' +
      '1 structured lesson matches too and is kept (a lesson changes by a revise or an operator\'s command):\n- 9 (lesson, workspace) Staging needs VPN.\n' +
      'To invalidate it (marked invalid, history kept): /forget --yes'
  })
})

test('/retro sends the session\'s events first, then asks mull for its retro; /promote; /proposals', async (t) => {
  const { fake, run } = await setup(t)
  assert.deepEqual(await run('/retro'), { kind: 'success', text: 'retro of session session-steer queued; its lessons reach the digest when it is done (job 1, available)' })
  assert.deepEqual(fake.steer.retros, ['session-steer'])
  const start = fake.requests.findIndex(r => r.path === '/v1/events')
  const retro = fake.requests.findIndex(r => r.path === '/v1/sessions/session-steer/retro')
  assert.ok(start >= 0 && start < retro, 'the session_start went out before the retro request')

  fake.addMemory(WS, 'fact', 'The API lives in server/api.ts.')
  fake.addMemory(WS, 'resource', 'Docs at https://example.com.', { src: 'web' })
  assert.deepEqual(await run('/promote m1 m2 m7'), {
    kind: 'success',
    text: 'Promoted to the global library: m1 → g1.\n- m2: not promoted, its source is external (web)\n- m7: not promoted, no live memory with this id in this workspace'
  })
  assert.deepEqual(fake.requests.find(r => r.path === '/v1/memories/promote').body, { workspace: WS, ids: ['m1', 'm2', 'm7'] })
  assert.deepEqual(await run('/promote'), { kind: 'success', text: 'Nothing promoted.\n- m2: not promoted, its source is external (web)' })
  // mull's ids are integers: a number goes as a number.
  await run('/promote 12,13 m1')
  assert.deepEqual(fake.requests.filter(r => r.path === '/v1/memories/promote').at(-1).body.ids, [12, 13, 'm1'])

  fake.steer.addProposal(WS, 'Add a lint step')
  assert.match((await run('/proposals')).text, /^1 pending proposal:\n- p1 \[pending\] \(memory\) Add a lint step/)
  assert.deepEqual(await run('/proposals accept p1'), { kind: 'error', text: 'mull refused (HTTP 403): proposals.agent_may_decide is false: a person decides with `mull proposals accept|reject ID` or the panel\'s /proposals' })
  assert.deepEqual(await run('/proposals maybe'), { kind: 'error', text: 'Usage: /proposals [pending|accepted|rejected|all] | /proposals accept ID [note] | /proposals reject ID note' })
  fake.steer.agentMayDecide = true
  assert.deepEqual(await run('/proposals reject p1 not now, later'), { kind: 'success', text: 'Proposal p1 rejected (status rejected), note: not now, later.' })
})

test('/mull shows the config\'s sources and where it lives, and the status; /mull scope echoes what it hides and the next digest follows it', async (t) => {
  const { fake, ctx, agent, run } = await setup(t, { digestRefreshMs: 1000 })
  fake.addMemory(WS, 'fact', 'The API lives in server/api.ts.')
  fake.addMemory('', 'preference', 'Answer in English.', { library: 'global' })
  const shown = await run('/mull')
  assert.equal(shown.kind, 'success')
  assert.match(shown.text, /^mull config for \/home\/dev\/shop:\n- memory\.scope = workspace \(default\)\n[\s\S]*config file: \/etc\/mull\/config\.toml\n[\s\S]*\n\nmull memory for \/home\/dev\/shop \(scope workspace\):\n- workspace library: 1 live/)
  assert.deepEqual(await run('/mull scope team'), { kind: 'error', text: 'Usage: /mull scope workspace|global|both' })
  assert.deepEqual(await run('/mull what'), { kind: 'error', text: 'Usage: /mull | /mull status | /mull config | /mull scope workspace|global|both' })

  const section = ctx.sections.find(s => s.name === 'mull-memory')
  const text = () => section.text({ agent })
  await until(() => text().includes('server/api.ts'), 'the workspace memory in the section')
  const switched = await run('/mull scope global')
  assert.equal(switched.kind, 'success')
  assert.match(switched.text, /^Scope of \/home\/dev\/shop: workspace → global \(from the next digest and search; no restart\)\. Hidden now: this workspace's own library, 1 live memories; [^\n]*To see them again, switch back: \/mull scope workspace or both/)
  // The next digest fetch (a new session here) follows the new scope.
  const next = fakeAgent(fakeSession('session-steer-2', WS))
  ctx.emit('agent/session-start', { agent: next, source: 'startup' })
  await until(() => section.text({ agent: next }).includes('Answer in English.'), 'the global memory in the next digest')
  assert.doesNotMatch(section.text({ agent: next }), /server\/api\.ts/)
  assert.match((await run('/selfip scope both')).text, /^Scope of \/home\/dev\/shop: global → both \(from the next digest and search; no restart\)\. Nothing becomes hidden/)
  assert.match((await run('/selfip')).text, /memory\.scope = both \(workspace \(api\)\)/)
  // Under both the status reads both libraries; under workspace it says the global one is not read.
  assert.match((await run('/mull status')).text, /- workspace library: 1 live[^\n]*\n[^\n]*\n- global library: 1 live/)
  await run('/mull scope workspace')
  assert.match((await run('/mull status')).text, /- global library \[not read under scope workspace\]: 1 live/)
})

test('the commands with mull down: each answers an error saying so, none throws', async (t) => {
  const { fake, ctx, run } = await setup(t, { timeoutMs: 200 })
  await fake.stop()
  for (const line of ['/memory x', '/forget x', '/retro', '/promote', '/proposals', '/mull', '/mull scope global', '/selfip scope both']) {
    const r = await run(line)
    assert.equal(r.kind, 'error', line)
    assert.match(r.text, /mull is unavailable at http:\/\/127\.0\.0\.1:\d+ \(/, line)
  }
  assert.equal(ctx.warnings().length, 1, 'one line for mull down, as ever')
})

test('a host without the commands capability: one line, nothing registered, no throw; the tools still work', async (t) => {
  const ctx = new FakeCtx()
  ctx.commands = undefined
  const { call, fake } = await setup(t, {}, ctx)
  const lines = ctx.logs.map(l => l.msg)
  assert.deepEqual(lines, ['mull plugin: this DSH has no commands capability (@deepseek-ai/dsh-commands), so the /memory, /forget, /retro, /promote, /proposals, /mull and /selfip commands are not registered; the tools work as usual'])
  assert.equal(ctx.logs[0].level, 'info')
  fake.addMemory(WS, 'fact', 'x')
  assert.equal((await call('memory_status')).ok, true)
})

test('commands: false registers none and logs nothing', async (t) => {
  const { ctx } = await setup(t, { commands: false })
  assert.deepEqual(ctx.commands.list(), [])
  assert.deepEqual(ctx.logs, [])
})

/**
 * A Cordis-shaped ctx: inject(['commands'], cb) runs cb with a child ctx
 * once the service is provided, get(name) reads a service without
 * injecting it, and the loader settles when the test says.
 */
function cordisCtx (commands) {
  const ctx = new FakeCtx()
  delete ctx.commands
  let settle
  const settled = new Promise(resolve => { settle = resolve })
  const services = { loader: { await: () => settled } }
  ctx.injected = []
  ctx.get = name => services[name]
  ctx.inject = (deps, cb) => {
    ctx.injected.push(deps)
    if (commands) settled.then(() => cb({ commands }))
  }
  ctx.settle = settle
  return ctx
}

test('under Cordis the commands come through ctx.inject([\'commands\']); without the service, one line once the loader settled', async (t) => {
  const { FakeCommands } = await import('../testkit/helpers.mjs')
  const commands = new FakeCommands()
  const withIt = cordisCtx(commands)
  await setup(t, {}, withIt)
  assert.deepEqual(withIt.injected, [['commands']])
  withIt.settle()
  await until(() => commands.list().length === 7, 'the commands registered in the child')
  assert.deepEqual(withIt.logs, [])

  const without = cordisCtx(undefined)
  await setup(t, {}, without)
  assert.deepEqual(without.logs, [], 'nothing said before the loader settled: the service may still come')
  without.settle()
  await until(() => without.logs.length === 1, 'the one line')
  assert.match(without.logs[0].msg, /this DSH has no commands capability/)
})
