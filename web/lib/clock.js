// The viewer's two clocks: monotonic milliseconds for intervals (decode time, keyframe retries, statistics),
// and wall-clock microseconds to compare with the service's capture times (latency, pictures from before a join).

/** Monotonic milliseconds (any origin). */
export const monotonicMs = () => performance.now();

/** Wall clock in microseconds, the same clock as the server's capture times: the system's own (`Date.now`, to the
 * millisecond). Not `performance.timeOrigin + performance.now()`: that is fixed at the page's load and runs on the
 * monotonic clock, so it falls behind once the system clock is stepped (a machine back from sleep, NTP); in a
 * long-lived page it read 477 ms behind the service's capture times, a picture "drawn before it was captured". */
export const wallUs = () => Date.now() * 1000;
