// Version cleanup: delete old manifests, then the data, deletion and index files no retained
// manifest references. It takes no lock and holds nothing a writer waits on; it deletes as it
// goes, so abandoning it (timeout, crash) loses nothing and the next run resumes.
//
// Safety: files younger than the grace period are never deleted, because a writer may have
// written them and not committed yet; the latest version is never deleted, and writers only ever
// create latest+1, so a deleted manifest is never re-created.
package table

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-store/strata/storage/objstore"
)

// CleanupOptions bound what CleanupVersions keeps.
type CleanupOptions struct {
	OlderThan time.Duration // manifests younger than this are kept (default 1h)
	// KeepLatest: the newest this-many versions are always kept, however old (default 1: the
	// latest; OlderThan already protects the versions a reader may still be using).
	KeepLatest int
	Grace      time.Duration // unreferenced files younger than this are kept (default 1h)
}

// CleanupResult reports a cleanup.
type CleanupResult struct {
	VersionsDeleted int
	FilesDeleted    int
	BytesDeleted    int64
	// RetainedDroppedBytes is Counters.DroppedBytes of the oldest version the cleanup kept: the
	// files dropped before it are gone (once past the grace period), those dropped since remain.
	RetainedDroppedBytes uint64
}

// CleanupVersions removes expired versions and unreferenced files.
func (t *Table) CleanupVersions(ctx context.Context, opts CleanupOptions) (CleanupResult, error) {
	if opts.OlderThan <= 0 {
		opts.OlderThan = time.Hour
	}
	if opts.KeepLatest < 1 {
		opts.KeepLatest = 1
	}
	if opts.Grace <= 0 {
		opts.Grace = time.Hour
	}
	now := t.now()
	var res CleanupResult

	objs, err := objstore.ListAll(ctx, t.store, versionsDir)
	if err != nil {
		return res, err
	}
	type ver struct {
		v   uint64
		obj objstore.ObjectInfo
	}
	var versions []ver
	for _, o := range objs {
		if v, ok := parseVersionKey(o.Key); ok {
			versions = append(versions, ver{v, o})
		}
	}
	slices.SortFunc(versions, func(a, b ver) int { return compareUint(a.v, b.v) })
	if len(versions) == 0 {
		return res, ErrNotFound
	}
	keepFrom := max(0, len(versions)-opts.KeepLatest)
	var retained []uint64
	for i, v := range versions {
		if i >= keepFrom || now.Sub(v.obj.ModTime) < opts.OlderThan {
			retained = append(retained, v.v)
			continue
		}
		if err := t.store.Delete(ctx, v.obj.Key); err != nil {
			return res, err
		}
		res.VersionsDeleted++
	}

	// Everything a retained version references. A version committed after the listing above
	// references only files that are either referenced by a version we read or young.
	referenced := map[string]bool{}
	for i, v := range retained {
		m, err := readManifest(ctx, t.store, v)
		if err != nil {
			return res, fmt.Errorf("table: cleanup: %w", err)
		}
		if i == 0 {
			res.RetainedDroppedBytes = m.Counters.DroppedBytes
		}
		for _, p := range manifestFiles(m) {
			referenced[p] = true
		}
	}
	for _, dir := range []string{dataDir, deletesDir, indexDir} {
		after := ""
		for {
			page, err := t.store.List(ctx, dir, after, 1000)
			if err != nil {
				return res, err
			}
			for _, o := range page.Objects {
				if referenced[o.Key] || now.Sub(o.ModTime) < opts.Grace || strings.HasSuffix(o.Key, "/") {
					continue
				}
				if err := t.store.Delete(ctx, o.Key); err != nil {
					return res, err
				}
				res.FilesDeleted++
				res.BytesDeleted += o.Size
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
	}
	return res, nil
}

// fileBytes maps every file m references to its size in bytes (a deletion file shared by several
// fragments counts each fragment's slice of it).
func fileBytes(m *Manifest) map[string]int64 {
	out := map[string]int64{}
	for _, f := range m.Fragments {
		out[f.Path] += f.Bytes
		if f.DeletionFile != "" {
			out[f.DeletionFile] += f.DeletionLength
		}
	}
	if m.KeyIndex != nil {
		for _, r := range m.KeyIndex.Runs {
			out[r.Path] += r.Bytes
		}
	}
	return out
}

// droppedBytes is the size of the files base references and next does not.
func droppedBytes(base, next *Manifest) uint64 {
	kept := fileBytes(next)
	var n int64
	for path, size := range fileBytes(base) {
		if _, ok := kept[path]; !ok {
			n += size
		}
	}
	return uint64(max(n, 0))
}

// manifestFiles lists every file version m references.
func manifestFiles(m *Manifest) []string {
	var out []string
	for _, f := range m.Fragments {
		out = append(out, f.Path)
		if f.DeletionFile != "" {
			out = append(out, f.DeletionFile)
		}
	}
	if m.KeyIndex != nil {
		for _, s := range m.KeyIndex.Runs {
			out = append(out, s.Path)
		}
	}
	return out
}
