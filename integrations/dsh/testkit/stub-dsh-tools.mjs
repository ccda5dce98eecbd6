// Stands in for @deepseek-ai/dsh-tools in tests: a defineTool that marks
// what it compiled, so a test can tell the plugin used it.
export function defineTool (options) {
  return { ...options, compiledBy: 'stub-defineTool' }
}
