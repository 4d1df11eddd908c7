// Which records a read shows: lance-context's lifecycle rules. Deleted records are gone from
// the store (the LSM's tombstones), so what is left to hide is expiry, retirement, a non-active
// status and being superseded, each of which a request may ask to see.
package contexts

import "time"

// Lifecycle is a read's view of lifecycle: what it includes beyond the visible records, at what
// time expiry is judged.
type Lifecycle struct {
	IncludeExpired bool
	IncludeRetired bool
	Now            time.Time
}

// Expired reports whether rec expired at or before now.
func Expired(rec *Record, now time.Time) bool {
	return rec.ExpiresAt != nil && !rec.ExpiresAt.After(now)
}

// HiddenByLifecycle reports whether rec is retired, superseded or in a status other than active
// or contradicted.
func HiddenByLifecycle(rec *Record) bool {
	if rec.LifecycleStatus == LifecycleActive || rec.LifecycleStatus == LifecycleContradicted {
		return rec.RetiredAt != nil || rec.SupersededByID != nil
	}
	return true
}

// Visible reports whether the read shows rec.
func (l Lifecycle) Visible(rec *Record) bool {
	if !IsRecordID(rec.ID) {
		return false
	}
	if !l.IncludeExpired && Expired(rec, l.Now) {
		return false
	}
	return l.IncludeRetired || !HiddenByLifecycle(rec)
}
