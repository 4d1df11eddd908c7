//go:build race

package vecindex

// raceEnabled shortens the recall test under the race detector: recall is the point, not
// interleavings (the index has no concurrency of its own to check).
const raceEnabled = true
