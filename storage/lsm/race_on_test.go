//go:build race

package lsm

// raceEnabled shortens the tests whose load is their point, not their interleavings, under the
// race detector (they run again without it in make test's storage passes).
const raceEnabled = true
