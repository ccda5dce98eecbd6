// The plugin's time: every timer, timestamp and deadline goes through a
// clock, so tests can decide when a deadline passes instead of racing a
// real one on a busy machine.
//
// A clock has now(), setTimeout/clearTimeout, setInterval/clearInterval and
// deadline(ms): an AbortSignal that aborts with a TimeoutError after ms.
// Timers the clock makes never keep the process alive (DSH decides when it
// exits).

export const realClock = {
  now: () => Date.now(),
  setTimeout (fn, ms) {
    const h = setTimeout(fn, ms)
    h.unref?.()
    return h
  },
  clearTimeout: h => clearTimeout(h),
  setInterval (fn, ms) {
    const h = setInterval(fn, ms)
    h.unref?.()
    return h
  },
  clearInterval: h => clearInterval(h),
  deadline: ms => AbortSignal.timeout(ms)
}

/**
 * Resolves when signal aborts (at once when it already has). For a race
 * against work that must stop at a deadline.
 */
export function aborted (signal) {
  if (signal.aborted) return Promise.resolve()
  return new Promise(resolve => signal.addEventListener('abort', () => resolve(), { once: true }))
}
