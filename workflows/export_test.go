package workflows

import "fmt"

// FmtCooldowns exposes cooldown to the external tests.
func FmtCooldowns(ns ...int) string {
	m := map[int]string{}
	for _, n := range ns {
		m[n] = cooldown(n).String()
	}
	return fmt.Sprint(m)
}
