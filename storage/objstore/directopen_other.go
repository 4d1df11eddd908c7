//go:build !linux

// Direct writes are used on Linux only; elsewhere every write goes through the page cache.
package objstore

func openDirect(string) *directWriter { return nil }
