//go:build !race

package vecindex

const raceEnabled = false
