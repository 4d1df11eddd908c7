//go:build !unix

// Reads of local objects elsewhere: through *os.File.
package objstore

import "os"

// readFile is an object opened for reading; the caller closes it.
type readFile struct{ *os.File }

func openRead(path string) (readFile, error) {
	f, err := os.Open(path)
	return readFile{f}, err
}

// Size is the file's length now.
func (f readFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
