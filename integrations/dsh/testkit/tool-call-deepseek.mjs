// A tiny scripted DeepSeek for the e2e's tool run: mull's fake DeepSeek
// answers text only, and this one makes DSH call a tool. For a request that
// offers tools it answers, in SSE, one call to the tool named by the first
// "[call:NAME ARGS-JSON]" marker in the last user message; once that call's
// result is in the conversation it answers plain text quoting the result.
// Requests without tools (DSH's session title) get a short title.
//
//   node testkit/tool-call-deepseek.mjs --listen 127.0.0.1:PORT

import { createServer } from 'node:http'

function chunk (res, delta, extra = {}) {
  res.write(`data: ${JSON.stringify({
    id: 'chatcmpl-e2e', object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: 'deepseek-v4-flash',
    choices: [{ index: 0, delta, finish_reason: null, ...extra }]
  })}\n\n`)
}

function finish (res, reason) {
  chunk(res, {}, { finish_reason: reason })
  res.write(`data: ${JSON.stringify({ id: 'chatcmpl-e2e', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, prompt_cache_hit_tokens: 0, prompt_cache_miss_tokens: 100 } })}\n\n`)
  res.end('data: [DONE]\n\n')
}

function text (content) {
  if (typeof content === 'string') return content
  return Array.isArray(content) ? content.map(p => p?.text ?? '').join('') : ''
}

export function answer (body, res) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  chunk(res, { role: 'assistant', content: '' })
  const msgs = body.messages ?? []
  if (!Array.isArray(body.tools) || body.tools.length === 0) {
    chunk(res, { content: 'E2E tool run' })
    return finish(res, 'stop')
  }
  const toolMsg = msgs.findLast(m => m.role === 'tool')
  if (toolMsg) {
    chunk(res, { content: `TOOL-RESULT: ${text(toolMsg.content)}` })
    return finish(res, 'stop')
  }
  const prompt = text(msgs.findLast(m => m.role === 'user' && /\[call:/.test(text(m.content)))?.content)
  const m = /\[call:(\w+) (\{.*?\})\]/.exec(prompt)
  if (!m) {
    chunk(res, { content: 'no [call:NAME ARGS] marker in the prompt' })
    return finish(res, 'stop')
  }
  chunk(res, { tool_calls: [{ index: 0, id: 'call_00_e2e', type: 'function', function: { name: m[1], arguments: m[2] } }] })
  return finish(res, 'tool_calls')
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const i = process.argv.indexOf('--listen')
  const [host, port] = (i > 0 ? process.argv[i + 1] : '127.0.0.1:7798').split(':')
  createServer(async (req, res) => {
    let raw = ''
    for await (const c of req) raw += c
    if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' })
      return res.end('{"error":{"message":"not found"}}')
    }
    try {
      answer(JSON.parse(raw), res)
    } catch (err) {
      res.writeHead(400, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ error: { message: String(err) } }))
    }
  }).listen(Number(port), host, () => console.log(`tool-call deepseek listening on http://${host}:${port}`))
}
