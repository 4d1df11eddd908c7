// Version cleanup: delete old manifests, then the data, deletion and index files no retained
// manifest references. What to delete is planned by pure functions (a listing, the retained
// manifests and the time in; keys out) and carried out by the process's deleter. It takes no
// lock and holds nothing a writer waits on, so abandoning it (timeout, crash) loses nothing and
// the next run plans again.
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

	"github.com/strata-store/strata/storage/deleter"
	"github.com/strata-store/strata/storage/objstore"
)

// CleanupOptions bound what CleanupVersions keeps.
type CleanupOptions struct {
	OlderThan time.Duration // manifests younger than this are kept (default 1h)
	// KeepLatest: the newest this-many versions are always kept, however old (default 1: the
	// latest; OlderThan already protects the versions a reader may still be using).
	KeepLatest int
	Grace      time.Duration // unreferenced files younger than this are kept (default 1h)
	// Keep: versions kept however old (read tokens that name them), with the files they reference.
	Keep []uint64
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

// CleanupVersions removes expired versions and unreferenced files: it lists, plans
// (planExpiredVersions, planUnreferencedFiles: pure) and hands the plan to the process's deleter.
// Deletes that fail are counted, not returned: the next cleanup plans them again.
func (t *Table) CleanupVersions(ctx context.Context, opts CleanupOptions) (CleanupResult, error) {
	opts = opts.withDefaults()
	now := t.now()
	var res CleanupResult

	listing, err := objstore.ListAll(ctx, t.store, versionsDir)
	if err != nil {
		return res, err
	}
	expired, retained := planExpiredVersions(listing, now, opts)
	if len(retained) == 0 {
		return res, ErrNotFound
	}
	del := t.deleter.Delete(ctx, t.store, deleter.TableManifest, objectKeys(expired)...)
	res.VersionsDeleted = del.Deleted
	if err := ctx.Err(); err != nil {
		return res, err
	}

	// Everything a retained version references. A version committed after the listing above
	// references only files that are either referenced by a version read here or young.
	manifests := make([]*Manifest, 0, len(retained))
	for _, v := range retained {
		m, err := readManifest(ctx, t.store, v)
		if err != nil {
			return res, fmt.Errorf("table: cleanup: %w", err)
		}
		manifests = append(manifests, m)
	}
	res.RetainedDroppedBytes = manifests[0].Counters.DroppedBytes
	referenced := referencedFiles(manifests)
	// A page of the listing at a time: a table's files are never all held at once.
	for _, dir := range []string{dataDir, deletesDir, indexDir, vectorsDir, textDir} {
		for after := ""; ; {
			page, err := t.store.List(ctx, dir, after, 1000)
			if err != nil {
				return res, err
			}
			for _, o := range planUnreferencedFiles(referenced, page.Objects, now, opts.Grace) {
				if t.deleter.Delete(ctx, t.store, fileKind(o.Key), o.Key).Deleted == 1 {
					res.FilesDeleted++
					res.BytesDeleted += o.Size
				}
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
	}
	return res, ctx.Err()
}

func (o CleanupOptions) withDefaults() CleanupOptions {
	if o.OlderThan <= 0 {
		o.OlderThan = time.Hour
	}
	if o.KeepLatest < 1 {
		o.KeepLatest = 1
	}
	if o.Grace <= 0 {
		o.Grace = time.Hour
	}
	return o
}

// planExpiredVersions splits a listing of the versions directory into the manifests to delete
// (older than opts.OlderThan at now, not among the newest opts.KeepLatest nor in opts.Keep) and the versions
// kept, ascending. Pure: no I/O.
func planExpiredVersions(listing []objstore.ObjectInfo, now time.Time, opts CleanupOptions) (expired []objstore.ObjectInfo, retained []uint64) {
	type ver struct {
		v   uint64
		obj objstore.ObjectInfo
	}
	var versions []ver
	for _, o := range listing {
		if v, ok := parseVersionKey(o.Key); ok {
			versions = append(versions, ver{v, o})
		}
	}
	slices.SortFunc(versions, func(a, b ver) int { return compareUint(a.v, b.v) })
	keepFrom := max(0, len(versions)-opts.KeepLatest)
	for i, v := range versions {
		if i >= keepFrom || now.Sub(v.obj.ModTime) < opts.OlderThan || slices.Contains(opts.Keep, v.v) {
			retained = append(retained, v.v)
		} else {
			expired = append(expired, v.obj)
		}
	}
	return expired, retained
}

// referencedFiles is every file a manifest of retained references.
func referencedFiles(retained []*Manifest) map[string]bool {
	referenced := map[string]bool{}
	for _, m := range retained {
		for _, p := range manifestFiles(m) {
			referenced[p] = true
		}
	}
	return referenced
}

// planUnreferencedFiles is the files of listing (under the data, deletion, index and vector
// index directories) that are not referenced and that are at least grace old at now: a younger one
// may belong to a writer that has not committed yet. Pure: no I/O.
func planUnreferencedFiles(referenced map[string]bool, listing []objstore.ObjectInfo, now time.Time, grace time.Duration) []objstore.ObjectInfo {
	var out []objstore.ObjectInfo
	for _, o := range listing {
		if referenced[o.Key] || now.Sub(o.ModTime) < grace || strings.HasSuffix(o.Key, "/") {
			continue
		}
		out = append(out, o)
	}
	return out
}

// fileKind is what a table object is, by where it lives.
func fileKind(key string) deleter.Kind {
	switch {
	case strings.HasPrefix(key, dataDir):
		return deleter.Fragment
	case strings.HasPrefix(key, deletesDir):
		return deleter.DeletionVector
	case strings.HasPrefix(key, indexDir):
		return deleter.IndexRun
	case strings.HasPrefix(key, vectorsDir):
		return deleter.VectorIndex
	case strings.HasPrefix(key, textDir):
		return deleter.TextIndex
	case strings.HasPrefix(key, versionsDir):
		return deleter.TableManifest
	}
	return deleter.Other
}

func objectKeys(objs []objstore.ObjectInfo) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
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
		if f.VectorIndex != nil {
			out[f.VectorIndex.Path] += f.VectorIndex.Bytes
		}
		if f.TextIndex != nil {
			out[f.TextIndex.Path] += f.TextIndex.Bytes
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
		if f.VectorIndex != nil {
			out = append(out, f.VectorIndex.Path)
		}
		if f.TextIndex != nil {
			out = append(out, f.TextIndex.Path)
		}
	}
	if m.KeyIndex != nil {
		for _, s := range m.KeyIndex.Runs {
			out = append(out, s.Path)
		}
	}
	return out
}
