// The viewer's two clocks: monotonic milliseconds for intervals (decode time, keyframe retries, statistics),
// and wall-clock microseconds to compare with the service's capture times (latency, pictures from before a join).

/** Monotonic milliseconds (any origin). */
export const monotonicMs = () => performance.now();

/** Wall clock in microseconds, the same clock as the server's capture times. */
export const wallUs = () => (performance.timeOrigin + performance.now()) * 1000;
