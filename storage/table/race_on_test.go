//go:build race

package table

// raceEnabled shortens the slowest randomized tests under the race detector.
const raceEnabled = true
