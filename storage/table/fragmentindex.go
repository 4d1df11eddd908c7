// Per-fragment index builds (vector and full-text indexes): write an index object for each
// fragment of the latest version that lacks one, then commit every index in one version. The
// objects are written before the commit that names them; an object no commit names (a lost race,
// a fragment compacted away meanwhile, a failed commit) goes to the deleter, and cleanup collects
// whatever is left after its grace period.
package table

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// fragmentIndexBuild describes one kind of per-fragment index.
type fragmentIndexBuild[R any] struct {
	op   string     // the commit's operation name
	todo []Fragment // the fragments to index
	// build writes f's index object: its reference and path; ok is false when f gets none.
	build func(ctx context.Context, f Fragment) (ref R, path string, ok bool, err error)
	// attach sets ref on f unless f already has a serving index; it reports whether it did.
	attach func(f *Fragment, ref R) bool
	// attached is the index path f names ("" for none).
	attached func(f Fragment) string
	// progress, when set, is told of each fragment done.
	progress func(ref R, ok bool, done, total int)
}

// buildFragmentIndexes runs b: how many fragments the committed version indexed, and that
// version (m's when nothing was built).
func buildFragmentIndexes[R any](ctx context.Context, t *Table, m *Manifest, b fragmentIndexBuild[R]) (int, uint64, error) {
	built := map[uint64]R{}
	paths := map[uint64]string{}
	var written []string
	committed := false
	defer func() {
		if !committed {
			t.deleteFiles(written)
		}
	}()
	for i, f := range b.todo {
		ref, path, ok, err := b.build(ctx, f)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			built[f.ID], paths[f.ID] = ref, path
			written = append(written, path)
		}
		if b.progress != nil {
			b.progress(ref, ok, i+1, len(b.todo))
		}
	}
	if len(built) == 0 {
		return 0, m.Version, nil
	}
	next, err := t.commitWithRetry(ctx, b.op, func(base *Manifest) (*Manifest, error) {
		n := base.next(b.op, t.now())
		changed := false
		for i := range n.Fragments {
			if ref, ok := built[n.Fragments[i].ID]; ok && b.attach(&n.Fragments[i], ref) {
				changed = true
			}
		}
		if !changed {
			return nil, nil // every fragment was compacted away or indexed by another builder
		}
		return n, nil
	})
	if err != nil {
		return 0, 0, err
	}
	committed = true
	var orphans []string
	indexed := 0
	for id, path := range paths {
		if f, ok := next.Fragment(id); !ok || b.attached(f) != path {
			orphans = append(orphans, path)
			continue
		}
		indexed++
	}
	t.deleteFiles(orphans)
	return indexed, next.Version, nil
}

// indexObjectPath names a new index object of fragment id under dir (a random suffix: two
// builders never write the same object).
func indexObjectPath(dir string, id uint64, ext string) string {
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	return fmt.Sprintf("%s%d-%s.%s", dir, id, hex.EncodeToString(nonce[:]), ext)
}

// FragmentsWithoutSearchIndexes counts the fragments of m that BuildVectorIndexes or
// BuildTextIndexes would index (a fragment lacking both counts once).
func FragmentsWithoutSearchIndexes(m *Manifest, vec VectorIndexOptions, text TextIndexOptions) int {
	ids := map[uint64]bool{}
	for _, f := range vectorIndexTodo(m, vec) {
		ids[f.ID] = true
	}
	for _, f := range textIndexTodo(m, text) {
		ids[f.ID] = true
	}
	return len(ids)
}
