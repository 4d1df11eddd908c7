//go:build race

package table

// raceEnabled shortens the slowest randomized tests under the race detector, and skips the
// heavy ones (skipUnderRace).
const raceEnabled = true
