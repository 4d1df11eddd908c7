// Identities: the deterministic event id, item ids as materialized paths, and the log's key.
package datagen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// EventID is the deterministic id of an item's ordinal-th event of one checkpoint: the UUIDv5
// (OID namespace) of "item_id NUL checkpoint_id NUL ordinal", as lance-context derives it, so a
// retried append writes the same ids and is idempotent.
func EventID(itemID, checkpointID string, ordinal uint32) string {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte(itemID+"\x00"+checkpointID+"\x00"+strconv.FormatUint(uint64(ordinal), 10))).String()
}

// ItemID is a parsed item id: a root key, then one (origin step, branch index) segment per
// fan-out below the root ("5/expand:0/judge:1").
type ItemID struct {
	Root     string
	Segments []Segment
}

// Segment is one fan-out hop of an item id.
type Segment struct {
	Step   string
	Branch int64
}

// ParseItemID parses a stored item id.
func ParseItemID(s string) (ItemID, error) {
	parts := strings.Split(s, "/")
	if parts[0] == "" {
		return ItemID{}, fmt.Errorf("empty datagen item id '%s'", s)
	}
	id := ItemID{Root: parts[0]}
	for _, p := range parts[1:] {
		step, idx, ok := strings.Cut(p, ":")
		if !ok {
			return ItemID{}, fmt.Errorf("malformed item id segment '%s' in '%s'", p, s)
		}
		n, err := strconv.ParseInt(idx, 10, 64)
		if err != nil {
			return ItemID{}, fmt.Errorf("non-integer branch index '%s' in '%s'", idx, s)
		}
		id.Segments = append(id.Segments, Segment{Step: step, Branch: n})
	}
	return id, nil
}

// String is the stored path form.
func (id ItemID) String() string {
	var b strings.Builder
	b.WriteString(id.Root)
	for _, s := range id.Segments {
		fmt.Fprintf(&b, "/%s:%d", s.Step, s.Branch)
	}
	return b.String()
}

// Key is the log's key of an event: item_id NUL event_id. Item ids never hold a NUL (validation
// refuses them), so an item's events are exactly the keys in ItemRange(item).
func Key(itemID, eventID string) string { return itemID + "\x00" + eventID }

// ItemRange is the exclusive key range (after, before) holding every event of item.
func ItemRange(itemID string) (after, before string) { return itemID, itemID + "\x01" }

// SubItemRange is the exclusive key range holding every event of root's descendants: their keys
// all start with "root/" (and are longer), and "root0" ('/' + 1) is the first string past them.
func SubItemRange(root string) (after, before string) { return root + "/", root + "0" }
