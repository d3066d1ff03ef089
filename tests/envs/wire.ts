// Test helper: what a client sees after the transport serializes a value (parsed JSON).
export function wire<T>(value: T): unknown {
  return JSON.parse(JSON.stringify(value));
}
