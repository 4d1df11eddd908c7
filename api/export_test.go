package api

// SetStreamStorePage makes store listings read the catalog n stores at a time, until the returned
// function restores the default (tests of a listing that spans pages).
func SetStreamStorePage(n int) (restore func()) {
	old := streamStorePage
	streamStorePage = n
	return func() { streamStorePage = old }
}
