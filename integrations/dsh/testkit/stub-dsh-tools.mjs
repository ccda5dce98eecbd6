// Stands in for @deepseek-ai/dsh-tools in tests: a defineTool that marks
// what it compiled, so a test can tell the plugin used it. It also checks
// the parameters against the author rules of DSH's schema DSL
// (dsh-tools lib/types/schema.js, 0.1.0-rc.8), and throws as the real
// defineTool does on a schema it would refuse: a known type or oneOf on
// every node, only the keys that type takes, objects with an explicit
// boolean additionalProperties, and `required` only as true on a property.
// And, as DSH does with every tool value, it refuses a value execute
// resolves to that is not lossless JSON (an undefined field, NaN, a
// function…): DSH fails such a call with "value is not lossless JSON".
export function defineTool (options) {
  for (const [k, v] of Object.entries(options.parameters ?? {})) checkNode(v, `parameters.${k}`, true)
  return {
    ...options,
    compiledBy: 'stub-defineTool',
    async execute (args, exec) {
      const value = await options.execute(args, exec)
      const bad = notLossless(value, 'value')
      if (bad) throw new Error(`tool "${options.name}" returned invalid output: ${bad} is not lossless JSON`)
      return value
    }
  }
}

/** The path of the first part of v that does not survive a JSON round trip, or ''. */
function notLossless (v, path) {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return ''
  if (typeof v === 'number') return Number.isFinite(v) ? '' : path
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) { const bad = notLossless(v[i], `${path}[${i}]`); if (bad) return bad }
    return ''
  }
  if (typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) return path
  for (const [k, x] of Object.entries(v)) { const bad = notLossless(x, `${path}.${k}`); if (bad) return bad }
  return ''
}

const ANNOTATIONS = ['description', 'title', 'default', 'examples']
const KEYS = {
  json: ['type'],
  object: ['type', 'properties', 'additionalProperties'],
  array: ['type', 'items'],
  string: ['type', 'enum', 'const'],
  number: ['type', 'enum', 'const'],
  integer: ['type', 'enum', 'const'],
  boolean: ['type', 'enum', 'const'],
  null: ['type', 'enum', 'const']
}

function checkNode (node, path, property) {
  const fail = msg => { throw new Error(`defineTool: ${path}${msg}`) }
  if (!node || typeof node !== 'object' || Array.isArray(node)) fail(' must be a value schema object')
  const allowed = [...ANNOTATIONS, ...(property ? ['required'] : [])]
  if ('required' in node && node.required !== true) fail('.required must be true when present')
  if ('oneOf' in node) {
    if ('type' in node) fail(' cannot declare both type and oneOf')
    if (!Array.isArray(node.oneOf) || node.oneOf.length < 2) fail('.oneOf must be an array of at least two value schemas')
    for (const k of Object.keys(node)) if (![...allowed, 'oneOf'].includes(k)) fail(`.${k} is not supported`)
    node.oneOf.forEach((b, i) => checkNode(b, `${path}.oneOf[${i}]`, false))
    return
  }
  const keys = KEYS[node.type]
  if (!keys) fail('.type must be string/number/integer/boolean/null/array/object/json, or use oneOf')
  for (const k of Object.keys(node)) if (![...allowed, ...keys].includes(k)) fail(`.${k} is not supported`)
  if (node.type === 'object') {
    if (typeof node.additionalProperties !== 'boolean') fail('.additionalProperties must be explicitly true or false')
    for (const [k, v] of Object.entries(node.properties ?? {})) checkNode(v, `${path}.properties.${k}`, true)
  }
  if (node.type === 'array' && node.items !== undefined) checkNode(node.items, `${path}.items`, false)
  if (node.enum !== undefined && (!Array.isArray(node.enum) || node.enum.length === 0)) fail('.enum must be a non-empty array')
}
