// The refined harness (seed 004) on the DSH side, against the fake mull:
// the projection message re-sent only when its ETag changes, the skills
// materialized under the skills dir (and never a directory mull does not
// own), the harness_refine and harness_wrapup tools' wire format, and mull
// down: the agent goes on, one line logged.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { createBridge } from '../plugin.mjs'
import { normalizeConfig } from '../lib/config.mjs'
import { Harness, MANAGED_FILE, REFINE_FOLLOW_MS, defaultSkillsDir, harnessMessage, hasMullMarker } from '../lib/harness.mjs'
import { MullClient } from '../lib/client.mjs'
import { FakeMull, fakeSkillMarkdown } from '../testkit/fake-mull.mjs'
import { FakeCtx, dshSession, fakeAgent, fakeSession, preStep, until } from '../testkit/helpers.mjs'
import { TestClock } from '../testkit/clock.mjs'

const WS = '/home/dev/app'

function tempDir (t) {
  const dir = mkdtempSync(join(tmpdir(), 'mull-harness-test-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function startedFake (t) {
  const fake = await new FakeMull().start()
  t.after(() => fake.stop())
  return fake
}

/** A bridge on a fake ctx against fake mull, its skills under a temp dir. */
function bridgeFor (t, fake, config = {}, opts = {}) {
  const ctx = new FakeCtx()
  const clock = new TestClock()
  const skillsDir = config.skillsDir ?? join(tempDir(t), 'skills')
  const bridge = createBridge(ctx, { baseUrl: fake.url, flushMs: 10, timeoutMs: 300, skillsDir, ...config }, {
    workspace: WS, backoff: { minBackoffMs: 50, maxBackoffMs: 200 }, clock, ...opts
  })
  t.after(() => { const closed = bridge.close(); clock.expire(); return closed })
  return { ctx, bridge, clock, skillsDir }
}

const step = (ctx, agent, messages = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]) =>
  ctx.waterfall('agent/pre-step', [preStep(agent)], async () => ({ kind: 'enter', messages }))

/** A fetch that starts after this call: a step leaves one in flight, which may have asked before the fixture changed. */
async function refetch (bridge, session) {
  await bridge.harness.refreshProjection(session)
  await bridge.harness.refreshProjection(session)
}

const harnessMessages = decision => decision.messages.filter(m => m.content?.[0]?.text?.startsWith('<mull-harness'))

/** A step as DSH's agent loop runs it: the pre-step chain, then its messages appended to the session log. */
async function liveStep (ctx, agent, messages = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]) {
  const d = await step(ctx, agent, messages)
  if (d.kind === 'enter') for (const m of d.messages) agent.session.append('user/message', m, { surfaceOp: 'append' })
  return d
}

/** The harness blocks a session's next model request carries. */
const blocksSeen = session => session.messages().filter(m => m.content?.[0]?.text?.startsWith('<mull-harness'))
/** The harness user/message events of a session log. */
const blockEvents = session => session.events.filter(e => e.type === 'user/message' && e.data.content?.[0]?.text?.startsWith('<mull-harness'))

const PROJECTION = '# Continual Harness State\n## memory (1)\n- pnpm v1: Always use pnpm, never npm.'

test('projection on an older DSH without the session surface: a message per ETag change, none while it stays, one line logged; the shown keys are counted', async (t) => {
  const fake = await startedFake(t)
  fake.harness.projections.set('', { text: PROJECTION, keys: ['global:memory:pnpm'] })
  // timeoutMs bounds the first step's wait: long, so a loaded machine cannot make it pass first.
  const { ctx, bridge } = bridgeFor(t, fake, { timeoutMs: 60000 })
  const agent = fakeAgent(fakeSession('session-h1', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })

  // The first step waits (bounded) for the session's first fetch.
  const d1 = await step(ctx, agent)
  const m1 = harnessMessages(d1)
  assert.equal(m1.length, 1)
  assert.deepEqual(fake.requests.find(r => r.path === '/v1/harness/projection').query, { session: 'session-h1' })
  const etag = bridge.harness.sessions.get('session-h1').projection.etag
  assert.ok(etag)
  assert.equal(m1[0].content[0].text, `<mull-harness etag="${etag.replace(/"/g, '')}">\n${PROJECTION}\n</mull-harness>`)
  assert.deepEqual(m1[0].source, { kind: 'plugin', plugin: 'mull', form: 'recall' })
  assert.equal(m1[0].role, 'user')
  assert.equal(d1.messages.length, 2, 'the step\'s own message, then the harness')
  await until(() => fake.harness.injections.length === 1, 'the injection is counted')
  assert.deepEqual(fake.harness.injections, [{ session: 'session-h1', keys: ['global:memory:pnpm'] }])

  // Same ETag: the refresh answers 304 and the next steps carry nothing.
  await refetch(bridge, 'session-h1')
  const gets = fake.requests.filter(r => r.path === '/v1/harness/projection')
  assert.equal(gets.at(-1).headers['if-none-match'], etag, 'asks with the last ETag')
  for (let i = 0; i < 3; i++) assert.deepEqual(harnessMessages(await step(ctx, agent)), [])
  await refetch(bridge, 'session-h1')
  assert.equal(fake.harness.injections.length, 1)

  // A new ETag: exactly one new message, one new count.
  fake.harness.projections.set('', { text: PROJECTION + '\n## skill (1)\n- deploy v1: Deploy with the script.', keys: ['global:memory:pnpm', 'global:skill:deploy'] })
  await refetch(bridge, 'session-h1')
  const m2 = harnessMessages(await step(ctx, agent))
  assert.equal(m2.length, 1)
  assert.match(m2[0].content[0].text, /- deploy v1: Deploy with the script\.\n<\/mull-harness>$/)
  assert.notEqual(m2[0].content[0].text, m1[0].content[0].text)
  assert.deepEqual(harnessMessages(await step(ctx, agent)), [])
  await until(() => fake.harness.injections.length === 2, 'the second injection is counted')
  assert.deepEqual(fake.harness.injections[1].keys, ['global:memory:pnpm', 'global:skill:deploy'])

  // Every entry gone: the overview of none is shown once, retiring the names.
  const none = '# Continual Harness State\n\n## memory (0)\n- none'
  fake.harness.projections.set('', { text: none, keys: [] })
  await refetch(bridge, 'session-h1')
  const m3 = harnessMessages(await step(ctx, agent))
  assert.equal(m3.length, 1)
  assert.match(m3[0].content[0].text, /## memory \(0\)\n- none\n<\/mull-harness>$/)
  // An empty text is never shown.
  fake.harness.projections.set('', { text: '', keys: [] })
  await refetch(bridge, 'session-h1')
  assert.deepEqual(harnessMessages(await step(ctx, agent)), [])
  assert.equal(fake.harness.injections.length, 2, 'no keys, no count')
  assert.deepEqual(ctx.warnings().map(w => w.msg), ['mull plugin: this DSH has no session surface to replace the harness block in place (session.append with surfaceOp replace); each change is appended as a new block'])
})

test('projection with DSH\'s session surface: the first block appended, a change replaces it in place, the model request carries one', async (t) => {
  const fake = await startedFake(t)
  fake.harness.projections.set('', { text: PROJECTION, keys: ['global:memory:pnpm'] })
  const { ctx, bridge } = bridgeFor(t, fake, { timeoutMs: 60000 })
  const session = dshSession('session-r1', WS)
  const agent = fakeAgent(session)
  ctx.emit('agent/session-start', { agent, source: 'startup' })

  const d1 = await liveStep(ctx, agent)
  assert.equal(harnessMessages(d1).length, 1, 'the first block rides the step\'s messages')
  assert.equal(d1.messages.length, 2)
  const [first] = blockEvents(session)
  assert.deepEqual(blocksSeen(session).map(m => m.content[0].text), [first.data.content[0].text])
  for (let i = 0; i < 3; i++) assert.deepEqual(harnessMessages(await liveStep(ctx, agent)), [])
  assert.equal(blockEvents(session).length, 1, 'an unchanged ETag adds nothing')

  // A change: replaced in place (the seed's surfaceOp), not appended.
  fake.harness.projections.set('', { text: PROJECTION + '\n## skill (1)\n- deploy v1: Deploy with the script.', keys: ['global:memory:pnpm', 'global:skill:deploy'] })
  await refetch(bridge, 'session-r1')
  const before = session.surface.nodes.indexOf(first.seq)
  const d2 = await liveStep(ctx, agent)
  assert.deepEqual(harnessMessages(d2), [], 'the replacement is in the log already, not in the step\'s messages')
  const events = blockEvents(session)
  assert.equal(events.length, 2)
  assert.deepEqual(events[1].surfaceOp, { op: 'replace', start: first.seq, end: first.seq })
  assert.deepEqual(events[1].sourceEventSeqs, [first.seq])
  assert.equal(session.surface.nodes.indexOf(events[1].seq), before, 'the block keeps its place')
  const seen = blocksSeen(session)
  assert.equal(seen.length, 1, 'ONE block in the model request')
  assert.match(seen[0].content[0].text, /- deploy v1: Deploy with the script\.\n<\/mull-harness>$/)
  assert.deepEqual(seen[0].source, { kind: 'plugin', plugin: 'mull', form: 'recall' })
  await until(() => fake.harness.injections.length === 2, 'the replacement is counted')

  // A replace needs no message of the step's own; a first block does.
  fake.harness.projections.set('', { text: PROJECTION + '\n- third', keys: ['global:memory:pnpm'] })
  await refetch(bridge, 'session-r1')
  assert.deepEqual(harnessMessages(await liveStep(ctx, agent, [])), [])
  assert.equal(blocksSeen(session).length, 1)
  assert.match(blocksSeen(session)[0].content[0].text, /- third\n<\/mull-harness>$/)
  assert.deepEqual(ctx.warnings(), [])
})

test('projection with DSH\'s session surface: a resumed session finds its block, a compacted one gets a new one', async (t) => {
  const fake = await startedFake(t)
  fake.harness.projections.set('', { text: PROJECTION, keys: ['global:memory:pnpm'] })
  // The first process: shows the block, then exits.
  const one = bridgeFor(t, fake, { timeoutMs: 60000 })
  const first = dshSession('session-r2', WS)
  one.ctx.emit('agent/session-start', { agent: fakeAgent(first), source: 'startup' })
  assert.equal(harnessMessages(await liveStep(one.ctx, fakeAgent(first))).length, 1)
  await until(() => fake.harness.injections.length === 1, 'counted')

  // A new process resumes the session (DSH replays its log): the same ETag is not injected again.
  const two = bridgeFor(t, fake, { timeoutMs: 60000 })
  const resumed = dshSession('session-r2', WS, first.events)
  const agent = fakeAgent(resumed)
  two.ctx.emit('agent/session-start', { agent, source: 'resume' })
  assert.deepEqual(harnessMessages(await liveStep(two.ctx, agent)), [])
  assert.equal(blocksSeen(resumed).length, 1)
  assert.equal(blockEvents(resumed).length, 1, 'no duplicate block')

  // Its ETag changed while the session was away: the resumed block is replaced.
  fake.harness.projections.set('', { text: PROJECTION + '\n- new since', keys: ['global:memory:pnpm'] })
  await refetch(two.bridge, 'session-r2')
  assert.deepEqual(harnessMessages(await liveStep(two.ctx, agent)), [])
  assert.equal(blocksSeen(resumed).length, 1)
  assert.match(blocksSeen(resumed)[0].content[0].text, /- new since\n<\/mull-harness>$/)

  // A compaction shadows the block: the same ETag is injected again, at the tail.
  const nodes = resumed.surface.nodes
  resumed.compact(nodes[0], nodes.at(-1))
  assert.equal(blocksSeen(resumed).length, 0)
  const again = harnessMessages(await liveStep(two.ctx, agent))
  assert.equal(again.length, 1)
  assert.match(again[0].content[0].text, /- new since\n<\/mull-harness>$/)
  assert.equal(blocksSeen(resumed).length, 1)
  assert.deepEqual(harnessMessages(await liveStep(two.ctx, agent)), [], 'then shown, not again')
  assert.deepEqual([...one.ctx.warnings(), ...two.ctx.warnings()], [])
})

test('projection: a session whose harness has no entry yet gets no message until one appears', async (t) => {
  const fake = await startedFake(t)
  fake.harness.projections.set('', { text: '# Continual Harness State\n\n## memory (0)\n- none', keys: [] })
  const { ctx, bridge } = bridgeFor(t, fake, { timeoutMs: 60000 })
  const agent = fakeAgent(fakeSession('session-h0', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  assert.deepEqual(harnessMessages(await step(ctx, agent)), [])
  assert.deepEqual(harnessMessages(await step(ctx, agent)), [])
  fake.harness.projections.set('', { text: PROJECTION, keys: ['global:memory:pnpm'] })
  await refetch(bridge, 'session-h0')
  assert.equal(harnessMessages(await step(ctx, agent)).length, 1)
})

test('projection: braces broken apart, the ETag attribute kept quote-free, and a rejected step carries nothing', async (t) => {
  const m = harnessMessage('use {{name}} here', '"abc"', 'mull')
  assert.equal(m.content[0].text, '<mull-harness etag="abc">\nuse { {name} } here\n</mull-harness>')
  assert.ok(Object.isFrozen(m) && typeof m.id === 'string' && m.id.length > 0)

  const fake = await startedFake(t)
  fake.harness.projections.set('', { text: PROJECTION, keys: ['global:memory:pnpm'] })
  const { ctx, bridge } = bridgeFor(t, fake)
  const agent = fakeAgent(fakeSession('session-h2', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  await bridge.harness.start('session-h2')
  const rejected = await ctx.waterfall('agent/pre-step', [preStep(agent)], async () => ({ kind: 'reject', reason: 'x' }))
  assert.deepEqual(rejected, { kind: 'reject', reason: 'x' })
  assert.equal(harnessMessages(await step(ctx, agent)).length, 1, 'shown at the next step that enters')
  await until(() => fake.harness.injections.length === 1, 'counted once, for the step that showed it')
})

test('skills: written at session start, updated when the ETag changes, removed when gone; a directory mull does not own is never touched', async (t) => {
  const fake = await startedFake(t)
  const skillsDir = join(tempDir(t), 'skills')
  // The user's own: a mull-foo without mull's files, a mull-bar whose SKILL.md lost the marker, and an ordinary skill.
  const userFoo = '---\nname: mull-foo\ndescription: my own skill\n---\n\nmine\n'
  const userBar = '---\nname: mull-bar\ndescription: taken over\nmetadata:\n  author: me\n---\n\nmine too\n'
  const mine = '---\nname: my-skill\ndescription: unrelated\n---\n\nx\n'
  mkdirSync(join(skillsDir, 'mull-foo'), { recursive: true })
  writeFileSync(join(skillsDir, 'mull-foo', 'SKILL.md'), userFoo)
  mkdirSync(join(skillsDir, 'mull-bar'))
  writeFileSync(join(skillsDir, 'mull-bar', 'SKILL.md'), userBar)
  writeFileSync(join(skillsDir, 'mull-bar', MANAGED_FILE), 'x\n')
  mkdirSync(join(skillsDir, 'my-skill'))
  writeFileSync(join(skillsDir, 'my-skill', 'SKILL.md'), mine)
  // A copy of a mull bundle (the marker, but no .mull-managed): the user's too.
  const copied = fakeSkillMarkdown('copied', 'a copy I keep', 'kept by hand')
  mkdirSync(join(skillsDir, 'mull-copied'))
  writeFileSync(join(skillsDir, 'mull-copied', 'SKILL.md'), copied)
  const user = () => ['mull-foo', 'mull-bar', 'my-skill', 'mull-copied'].map(d => readFileSync(join(skillsDir, d, 'SKILL.md'), 'utf8'))

  const deploy1 = fakeSkillMarkdown('deploy', 'Deploy the app', '1. Run scripts/ship.sh', 1)
  fake.harness.skills.set('', [
    { name: 'mull-deploy', source: 'harness', id: 'deploy', version: 1, markdown: deploy1 },
    { name: 'mull-foo', source: 'harness', id: 'foo', version: 1, markdown: fakeSkillMarkdown('foo', 'mull\'s foo', 'theirs') },
    { name: 'mull-bar', source: 'harness', id: 'bar', version: 1, markdown: fakeSkillMarkdown('bar', 'mull\'s bar', 'theirs') },
    { name: 'mull-copied', source: 'harness', id: 'copied', version: 2, markdown: fakeSkillMarkdown('copied', 'mull\'s newer', 'theirs', 2) },
    { name: '../escape', source: 'harness', id: 'x', version: 1, markdown: fakeSkillMarkdown('x', 'x', 'x') },
    { name: 'mull-nomarker', source: 'harness', id: 'nomarker', version: 1, markdown: '---\nname: mull-nomarker\ndescription: d\n---\n\nbody\n' },
    // Not a global skill entry nor a playbook (a session-local one, say): DSH's skills dir is shared by every session.
    { name: 'mull-mine', source: 'local', id: 'mine', version: 1, markdown: fakeSkillMarkdown('mine', 'only this session', 'x') },
    { name: 'mull-nosource', id: 'nosource', version: 1, markdown: fakeSkillMarkdown('nosource', 'who knows', 'x') }
  ])
  const { ctx, bridge } = bridgeFor(t, fake, { skillsDir, timeoutMs: 60000 })
  const agent = fakeAgent(fakeSession('session-k1', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  await step(ctx, agent) // the first step waits for the first sync
  assert.equal(readFileSync(join(skillsDir, 'mull-deploy', 'SKILL.md'), 'utf8'), deploy1)
  assert.ok(existsSync(join(skillsDir, 'mull-deploy', MANAGED_FILE)))
  assert.deepEqual(readdirSync(join(skillsDir, 'mull-deploy')).sort(), [MANAGED_FILE, 'SKILL.md'], 'no temporary file left')
  assert.deepEqual(user(), [userFoo, userBar, mine, copied])
  assert.deepEqual(readdirSync(skillsDir).sort(), ['mull-bar', 'mull-copied', 'mull-deploy', 'mull-foo', 'my-skill'], 'neither ../escape, a bundle without the marker, nor one not harness/playbook is written')
  assert.ok(!existsSync(join(skillsDir, '..', 'escape')))
  const lines = ctx.warnings().map(w => w.msg)
  assert.equal(lines.length, 7, lines.join('\n'))
  assert.ok(lines.includes('mull plugin: skill "mull-mine" from mull has source "local", not "harness" or "playbook"; not written (the skills dir is shared by every session)'))
  assert.ok(lines.some(l => l.startsWith('mull plugin: skill "mull-nosource" from mull has source undefined,')))
  assert.ok(lines.some(l => l.includes(`${join(skillsDir, 'mull-foo')} is not mull's`)))
  assert.ok(lines.some(l => l.includes(`${join(skillsDir, 'mull-bar')} is not mull's`)))
  assert.ok(lines.some(l => l.includes(`${join(skillsDir, 'mull-copied')} is not mull's`)))

  // Unchanged: 304, nothing rewritten; a second sync logs nothing more.
  await bridge.harness.refreshSkills('session-k1')
  const skillGets = fake.requests.filter(r => r.path === '/v1/harness/skills')
  assert.ok(skillGets.at(-1).headers['if-none-match'], 'asks with the last ETag')
  assert.equal(ctx.warnings().length, 7)

  // Updated (a new version): rewritten in place.
  const deploy2 = fakeSkillMarkdown('deploy', 'Deploy the app', '1. Run scripts/ship.sh\n2. Tag the release', 2)
  fake.harness.skills.set('', [{ name: 'mull-deploy', source: 'harness', id: 'deploy', version: 2, markdown: deploy2 }])
  await bridge.harness.refreshSkills('session-k1')
  assert.equal(readFileSync(join(skillsDir, 'mull-deploy', 'SKILL.md'), 'utf8'), deploy2)
  // A file someone put in mull's directory keeps the directory when the skill goes.
  fake.harness.skills.set('', [{ name: 'mull-review', source: 'playbook', id: 'playbook-review', version: 1, markdown: fakeSkillMarkdown('review', 'Playbook: review (1 steps)', '1. Read the diff') }])
  writeFileSync(join(skillsDir, 'mull-deploy', 'notes.txt'), 'my notes\n')
  await bridge.harness.refreshSkills('session-k1')
  assert.ok(existsSync(join(skillsDir, 'mull-review', 'SKILL.md')))
  assert.deepEqual(readdirSync(join(skillsDir, 'mull-deploy')), ['notes.txt'], 'mull\'s two files gone, the user\'s file stays')

  // Archived or rolled back: gone from mull's answer, gone from the dir.
  fake.harness.skills.set('', [])
  await bridge.harness.refreshSkills('session-k1')
  assert.ok(!existsSync(join(skillsDir, 'mull-review')))
  assert.deepEqual(user(), [userFoo, userBar, mine, copied], 'the user\'s directories survive every sync')
  assert.deepEqual(readdirSync(skillsDir).sort(), ['mull-bar', 'mull-copied', 'mull-deploy', 'mull-foo', 'my-skill'])
})

test('skills: the periodic refresh asks for them with the digest; a 304 rewrites a bundle someone deleted', async (t) => {
  const fake = await startedFake(t)
  const md = fakeSkillMarkdown('deploy', 'Deploy', 'body')
  fake.harness.skills.set('', [{ name: 'mull-deploy', source: 'harness', id: 'deploy', version: 1, markdown: md }])
  const { ctx, bridge, skillsDir } = bridgeFor(t, fake, { digestRefreshMs: 1000 })
  const agent = fakeAgent(fakeSession('session-k2', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  await bridge.harness.start('session-k2')
  rmSync(join(skillsDir, 'mull-deploy'), { recursive: true })
  const before = fake.requests.filter(r => r.path === '/v1/harness/skills').length
  bridge.refreshAll()
  await until(() => fake.requests.filter(r => r.path === '/v1/harness/skills').length > before, 'the refresh asks for the skills')
  await until(() => existsSync(join(skillsDir, 'mull-deploy', 'SKILL.md')), 'the bundle is back')
  assert.equal(readFileSync(join(skillsDir, 'mull-deploy', 'SKILL.md'), 'utf8'), md)
})

test('the marker: metadata author mull in the frontmatter, nowhere else', () => {
  assert.equal(hasMullMarker(fakeSkillMarkdown('a', 'd', 'b')), true)
  assert.equal(hasMullMarker('---\nname: x\ndescription: d\nmetadata:\n  author: mull\n---\nbody'), true)
  assert.equal(hasMullMarker('---\nname: x\ndescription: d\nauthor: mull\n---\nbody'), false, 'not under metadata')
  assert.equal(hasMullMarker('---\nname: x\ndescription: d\nmetadata:\n  author: mull-fan\n---\n'), false)
  assert.equal(hasMullMarker('---\nname: x\ndescription: d\n---\nmetadata:\n  author: mull\n'), false, 'in the body')
  assert.equal(hasMullMarker('no frontmatter'), false)
  assert.equal(hasMullMarker(undefined), false)
})

test('config: harness on by default, skillsDir DSH\'s own; a relative skillsDir falls back with one warning', () => {
  const warned = []
  const c = normalizeConfig({ skillsDir: 'rel/skills' }, m => warned.push(m))
  assert.equal(c.harness, true)
  assert.equal(c.skillsDir, defaultSkillsDir())
  assert.equal(defaultSkillsDir({ DSH_HOME: '/x/dsh' }), '/x/dsh/skills')
  assert.match(defaultSkillsDir({}), /\/\.dsh\/skills$/)
  assert.deepEqual(warned, [`mull plugin config: skillsDir="rel/skills" is not an absolute path; using ${defaultSkillsDir()}`])
  assert.equal(normalizeConfig({ skillsDir: '/abs/skills', harness: false }).skillsDir, '/abs/skills')
})

test('harness off: no harness request, no harness tool, no message', async (t) => {
  const fake = await startedFake(t)
  fake.harness.projections.set('', { text: PROJECTION, keys: [] })
  const { ctx, bridge } = bridgeFor(t, fake, { harness: false })
  const agent = fakeAgent(fakeSession('session-off', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  assert.deepEqual(harnessMessages(await step(ctx, agent)), [])
  bridge.refreshAll()
  await bridge.close()
  assert.equal(fake.requests.filter(r => r.path.startsWith('/v1/harness/')).length, 0)
  assert.ok(!bridge.toolSpecs().some(s => s.name.startsWith('harness_')))
})

/** The tools of a bridge, by name. */
function tools (bridge) {
  return Object.fromEntries(bridge.toolSpecs().map(s => [s.name, s]))
}

test('harness_refine plan: posts the plan, follows the job and answers with the seed\'s fields', async (t) => {
  const fake = await startedFake(t)
  const refinement = {
    id: 'refine_7',
    summary: 'save the pnpm rule',
    scope: {},
    committed_at: '2026-12-01T00:00:00Z',
    applied_edits: [
      { action: 'create', kind: 'memory', id: 'pnpm', after: 'Always use pnpm.', reason: 'user said so', blast_radius: 'project', applied: true },
      { action: 'update', kind: 'prompt', id: 'base_system_prompt', reason: 'x', blast_radius: 'general', applied: false, error: 'base_system_prompt is immutable' }
    ]
  }
  fake.harness.jobScript = [
    { state: 'available' },
    { state: 'running' },
    { state: 'completed', review: { outcome: 'approved', rationale: 'manual', refinement_id: 'refine_7' }, refinement }
  ]
  const { ctx, bridge } = bridgeFor(t, fake, {}, { harnessTiming: { poll: [1] } })
  const agent = fakeAgent(fakeSession('session-r1', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  const v = await tools(bridge).harness_refine.execute({ mode: 'plan', instruction: '  save the pnpm rule ', global: true }, { agent })
  const post = fake.requests.find(r => r.method === 'POST' && r.path === '/v1/harness/refine')
  assert.deepEqual(post.body, { mode: 'plan', instruction: 'save the pnpm rule', global: true, session: 'session-r1' })
  const polls = fake.requests.filter(r => r.method === 'GET' && r.path === '/v1/harness/refine/1')
  assert.equal(polls.length, 3, 'polled until the job completed')
  assert.deepEqual(polls[0].query, { session: 'session-r1' }, 'mull answers about a job only to its session')
  assert.deepEqual(v, {
    status: 'approved',
    job_id: 1,
    scope: 'global',
    state: 'completed',
    refinement_id: 'refine_7',
    summary: 'save the pnpm rule',
    applied: 1,
    failed: 1,
    rejected: [{ kind: 'prompt', id: 'base_system_prompt', action: 'update', error: 'base_system_prompt is immutable' }],
    edits: [
      { action: 'create', kind: 'memory', id: 'pnpm', applied: true, reason: 'user said so', blastRadius: 'project' },
      { action: 'update', kind: 'prompt', id: 'base_system_prompt', applied: false, error: 'base_system_prompt is immutable', reason: 'x', blastRadius: 'general' }
    ],
    rationale: 'manual'
  })
  assert.deepEqual(JSON.parse(tools(bridge).harness_refine.output.render({}, v)[0].text), v)
  // The session's start reached mull before the refine call (mull serves known sessions only).
  const firstEvents = fake.requests.findIndex(r => r.path === '/v1/events')
  assert.ok(firstEvents >= 0 && firstEvents < fake.requests.indexOf(post))
})

test('harness_refine plan: a store already under review is a clear "already-queued" result (409, nothing followed); the same refine again is marked duplicate', async (t) => {
  const fake = await startedFake(t)
  const { ctx, bridge } = bridgeFor(t, fake, {}, { harnessTiming: { poll: [1] } })
  const agent = fakeAgent(fakeSession('session-q1', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  // An automatic review of this session's store is queued as job 5.
  fake.harness.jobs.set('5', [{ state: 'completed', review: { outcome: 'declined', rationale: 'nothing new' } }])
  fake.harness.jobSessions.set('5', 'session-q1')
  fake.harness.queued.set('session:session-q1', { job: 5, session: 'session-q1', instruction: '' })
  const refine = tools(bridge).harness_refine
  const v = await refine.execute({ instruction: 'save the deploy steps as a skill' }, { agent })
  assert.deepEqual(v, {
    status: 'already-queued',
    job_id: 5,
    scope: 'local',
    refinement_id: 'none',
    summary: 'not queued: a review of this store is already queued as job 5; try again after it',
    applied: 0,
    failed: 0,
    rejected: [],
    edits: []
  })
  assert.equal(fake.requests.filter(r => r.path === '/v1/harness/refine/5').length, 0, 'the other job is not followed')

  // The same request as the queued one (no instruction): mull answers that job with duplicate; the result says so.
  const d = await refine.execute({}, { agent })
  assert.equal(d.duplicate, true)
  assert.equal(d.job_id, 5)
  assert.equal(d.status, 'declined')
  assert.equal(d.note, 'the same refine was already queued as job 5; this is that job\'s outcome, no second job was queued')
  // A fresh one: no duplicate field.
  fake.harness.queued.clear()
  const f = await refine.execute({}, { agent })
  assert.equal(f.duplicate, undefined)
  assert.equal(f.job_id, 1)
})

test('harness_refine plan: a job that never ends is followed 90 s at most, by the clock, with backoff', async (t) => {
  const fake = await startedFake(t)
  fake.harness.jobScript = [{ state: 'running' }]
  // A clock whose pauses pass at once and count.
  let now = 0
  const pauses = []
  const clock = {
    now: () => now,
    setTimeout: (fn, ms) => { pauses.push(ms); now += ms; return setImmediate(fn) },
    clearTimeout: h => clearImmediate(h),
    setInterval: () => 0,
    clearInterval: () => {},
    deadline: ms => AbortSignal.timeout(Math.max(ms, 60000))
  }
  const client = new MullClient({ baseUrl: fake.url, timeoutMs: 1000, log: () => {}, clock })
  // The session is known to mull once its events arrived.
  await client.request('POST', '/v1/events', { body: { events: [{ id: 'e1', type: 'session_start', session_id: 'session-r2', workspace: WS, time: '2026-12-01T00:00:00Z', payload: {} }] } })
  const h = new Harness({ client, log: () => {}, skillsDir: tempDir(t), clock })
  const refine = h.toolSpecs({ where: () => ({ workspace: WS, session: 'session-r2' }) }).find(s => s.name === 'harness_refine')
  const v = await refine.execute({ instruction: 'x' }, {})
  assert.equal(v.status, 'running')
  assert.equal(v.job_id, 1)
  assert.equal(v.scope, 'local')
  assert.match(v.summary, /still running after 90s/)
  assert.equal(pauses.reduce((a, b) => a + b, 0), REFINE_FOLLOW_MS, 'no longer than 90 s in all')
  assert.deepEqual(pauses.slice(0, 6), [250, 500, 1000, 2000, 4000, 5000], 'backoff, then every 5 s')
  assert.ok(pauses.length < 25, `${pauses.length} polls`)
})

test('harness_refine: a failed job comes back as failed with its errors; a retrying one at once', async (t) => {
  const fake = await startedFake(t)
  const { ctx, bridge } = bridgeFor(t, fake, {}, { harnessTiming: { poll: [1] } })
  const agent = fakeAgent(fakeSession('session-r3', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  fake.harness.jobScript = [{ state: 'retryable', review: { outcome: 'failed', rationale: 'planner: edits[0].kind: required' }, errors: ['planner: edits[0].kind: required'] }]
  const v = await tools(bridge).harness_refine.execute({}, { agent })
  assert.equal(v.status, 'failed')
  assert.equal(v.state, 'retryable')
  assert.deepEqual(v.errors, ['planner: edits[0].kind: required'])
  assert.equal(v.applied, 0)
  assert.equal(fake.requests.filter(r => r.path === '/v1/harness/refine/1').length, 1)
  fake.harness.jobScript = [{ state: 'completed', review: { outcome: 'assessed', rationale: 'no edits' } }]
  const w = await tools(bridge).harness_refine.execute({ mode: 'plan' }, { agent })
  assert.equal(w.status, 'assessed')
  assert.equal(w.refinement_id, 'none')
  assert.equal(w.summary, 'no edits')
  // A global refinement held by harness.require_global_approval waits as a proposal.
  fake.harness.jobScript = [{ state: 'completed', review: { outcome: 'approved', rationale: 'manual', refinement_id: '42' }, pending_proposal: '42' }]
  const p = await tools(bridge).harness_refine.execute({ global: true }, { agent })
  assert.equal(p.status, 'pending-approval')
  assert.equal(p.refinement_id, '42')
  assert.equal(p.scope, 'global')
})

test('harness_refine rollback: the scope must be explicit; the rollback\'s refinement comes back', async (t) => {
  const fake = await startedFake(t)
  fake.harness.refinements.set('refine_7', {
    scope: 'global',
    rollback: {
      id: 'rollback_refine_7',
      summary: 'rollback of refine_7',
      rollback_of: 'refine_7',
      scope: {},
      applied_edits: [{ action: 'delete', kind: 'memory', id: 'pnpm', before: 'Always use pnpm.', reason: 'rollback:refine_7', blast_radius: 'project', applied: true }]
    }
  })
  const { ctx, bridge } = bridgeFor(t, fake)
  const agent = fakeAgent(fakeSession('session-r4', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  const refine = tools(bridge).harness_refine
  await assert.rejects(refine.execute({ mode: 'rollback', rollback_id: 'refine_7' }, { agent }), /harness_refine: rollback needs scope, "local" or "global", stated explicitly/)
  await assert.rejects(refine.execute({ mode: 'rollback', scope: 'global' }, { agent }), /rollback needs rollback_id/)
  await assert.rejects(refine.execute({ mode: 'undo' }, { agent }), /mode must be plan or rollback/)
  assert.equal(fake.requests.filter(r => r.path === '/v1/harness/refine').length, 0, 'nothing sent for a bad call')
  const v = await refine.execute({ mode: 'rollback', rollback_id: 'refine_7', scope: 'global' }, { agent })
  assert.deepEqual(fake.requests.find(r => r.path === '/v1/harness/refine').body, { mode: 'rollback', rollback_id: 'refine_7', scope: 'global', session: 'session-r4' })
  assert.deepEqual(v, {
    status: 'applied',
    scope: 'global',
    refinement_id: 'rollback_refine_7',
    summary: 'rollback of refine_7',
    applied: 1,
    failed: 0,
    rejected: [],
    edits: [{ action: 'delete', kind: 'memory', id: 'pnpm', applied: true, reason: 'rollback:refine_7', blastRadius: 'project' }]
  })
  await assert.rejects(refine.execute({ mode: 'rollback', rollback_id: 'refine_7', scope: 'local' }, { agent }), /mull answered HTTP 404 to POST \/v1\/harness\/refine: no refinement found with id refine_7/)
})

test('harness_wrapup: the suggestions, and each promotion with mull\'s error text on a conflict', async (t) => {
  const fake = await startedFake(t)
  fake.harness.wrapup.set('session-w1', [
    { id: 'deploy', kind: 'skill', fate: 'promote', reason: '3 injections, no same-id global' },
    { id: 'scratch', kind: 'memory', fate: 'archive', reason: 'never injected (0 uses)' }
  ])
  fake.harness.promotions.set('deploy', [200, { refinement: { id: 'promote_1_abcdef', applied_edits: [] } }])
  fake.harness.promotions.set('pnpm', [409, { error: 'global id conflict' }])
  fake.harness.promotions.set('held', [202, { pending_proposal: '9' }])
  const { ctx, bridge } = bridgeFor(t, fake)
  const agent = fakeAgent(fakeSession('session-w1', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  const wrapup = tools(bridge).harness_wrapup
  const plain = await wrapup.execute({}, { agent })
  assert.deepEqual(plain, { suggestions: fake.harness.wrapup.get('session-w1') })
  assert.equal(fake.requests.filter(r => r.path === '/v1/harness/promote').length, 0)
  const v = await wrapup.execute({ promote: ['deploy', 'pnpm', 'deploy', 'nope', 'held'] }, { agent })
  assert.deepEqual(v.promoted, [
    { id: 'deploy', applied: true, refinement_id: 'promote_1_abcdef' },
    { id: 'pnpm', applied: false, error: 'global id conflict' },
    { id: 'nope', applied: false, error: 'local entry not found: nope' },
    { id: 'held', applied: false, pending_proposal: '9', error: 'waits for approval (harness.require_global_approval)' }
  ])
  assert.deepEqual(fake.requests.filter(r => r.path === '/v1/harness/promote').map(r => r.body), [
    { session: 'session-w1', id: 'deploy' }, { session: 'session-w1', id: 'pnpm' }, { session: 'session-w1', id: 'nope' }, { session: 'session-w1', id: 'held' }
  ])
  assert.deepEqual((await wrapup.execute({ promote: 'deploy' }, { agent })).promoted.map(p => p.id), ['deploy'], 'one id as a string')
  await assert.rejects(wrapup.execute({ promote: [3] }, { agent }), /promote must be a list of local entry ids/)
  await assert.rejects(wrapup.execute({}, {}), /harness_wrapup needs a live agent session/)
})

test('mull down: the steps go on unchanged, the tools fail as tool errors, one line logged', async (t) => {
  const fake = await startedFake(t)
  const { ctx, bridge, skillsDir } = bridgeFor(t, fake)
  await fake.stop()
  // The plugin's timers never keep a process alive (DSH decides); this test's does.
  const alive = setInterval(() => {}, 1000)
  t.after(() => clearInterval(alive))
  const agent = fakeAgent(fakeSession('session-d1', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]
  for (let i = 0; i < 3; i++) assert.deepEqual(await step(ctx, agent, messages), { kind: 'enter', messages })
  bridge.refreshAll()
  await bridge.harness.refresh('session-d1')
  await assert.rejects(tools(bridge).harness_refine.execute({}, { agent }), /mull is unavailable; the harness was not refined/)
  await assert.rejects(tools(bridge).harness_wrapup.execute({}, { agent }), /mull is unavailable; no wrap-up now/)
  assert.ok(!existsSync(skillsDir), 'nothing written, nothing removed')
  const lines = ctx.warnings().map(w => w.msg)
  assert.equal(lines.length, 1, lines.join('\n'))
  assert.match(lines[0], /is unavailable/)
})

test('an old mull without the harness routes: one line each, the steps go on', async (t) => {
  const fake = await startedFake(t)
  fake.harness.handle = (method, path) => [404, { error: `no route ${method} ${path}` }]
  const { ctx, bridge } = bridgeFor(t, fake)
  const agent = fakeAgent(fakeSession('session-o1', WS))
  ctx.emit('agent/session-start', { agent, source: 'startup' })
  assert.deepEqual(harnessMessages(await step(ctx, agent)), [])
  await bridge.harness.refresh('session-o1')
  await bridge.harness.refresh('session-o1')
  assert.deepEqual(ctx.warnings().map(w => w.msg).sort(), [
    'mull answered HTTP 404 to GET /v1/harness/projection: no route GET /v1/harness/projection; the harness is not injected until it serves one',
    'mull answered HTTP 404 to GET /v1/harness/skills: no route GET /v1/harness/skills; mull\'s skills are not materialized until it serves them'
  ].sort())
})
