// Package contexts is what a context store's record is and how it is found: the record and its
// wire form (lance-context's RecordDto field names), the checks a record passes before anything
// is written, its Arrow rows (record.go, arrow.go), which records a read shows (visibility.go,
// filters.go), and how search and retrieve rank them (rank.go, text.go). It knows nothing of
// HTTP or of the store (it borrows only the vector indexes' distance, storage/vecindex, so that
// exact and indexed rankings agree): the API reads rows from the store and hands them here.
package contexts

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Lifecycle statuses lance-context names. Any other status hides a record by default.
const (
	LifecycleActive       = "active"
	LifecycleContradicted = "contradicted"
)

// Relationship is a directed edge from a record to another node (a record id or anything else).
type Relationship struct {
	TargetID string   `json:"target_id"`
	Relation string   `json:"relation"`
	Weight   *float32 `json:"weight,omitempty"`
}

// StateMetadata is the agent state captured with a record.
type StateMetadata struct {
	Step         *int32  `json:"step,omitempty"`
	ActivePlanID *string `json:"active_plan_id,omitempty"`
	TokensUsed   *int32  `json:"tokens_used,omitempty"`
	Custom       *string `json:"custom,omitempty"`
}

// Record is one context record as stored and as served (lance-context's RecordDto). Binary
// payloads travel as base64 in JSON (encoding/json's form for []byte, as lance-context's).
type Record struct {
	ID              string          `json:"id"`
	ExternalID      *string         `json:"external_id,omitempty"`
	RunID           string          `json:"run_id"`
	BotID           *string         `json:"bot_id,omitempty"`
	SessionID       *string         `json:"session_id,omitempty"`
	Tenant          *string         `json:"tenant,omitempty"`
	Source          *string         `json:"source,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	Role            string          `json:"role"`
	ContentType     string          `json:"content_type"`
	TextPayload     *string         `json:"text_payload,omitempty"`
	BinaryPayload   []byte          `json:"binary_payload,omitempty"`
	PayloadURI      *string         `json:"payload_uri,omitempty"`
	PayloadSize     *int64          `json:"payload_size,omitempty"`
	PayloadChecksum *string         `json:"payload_checksum,omitempty"`
	Embedding       []float32       `json:"embedding,omitempty"`
	StateMetadata   *StateMetadata  `json:"state_metadata,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	Relationships   []Relationship  `json:"relationships,omitempty"`
	ExpiresAt       *time.Time      `json:"expires_at,omitempty"`
	RetentionPolicy *string         `json:"retention_policy,omitempty"`
	LifecycleStatus string          `json:"lifecycle_status"`
	RetiredAt       *time.Time      `json:"retired_at,omitempty"`
	RetiredReason   *string         `json:"retired_reason,omitempty"`
	SupersedesID    *string         `json:"supersedes_id,omitempty"`
	SupersededByID  *string         `json:"superseded_by_id,omitempty"`
}

// AddRecord is one record of an add or an upsert (lance-context's AddRecordRequest): the server
// chooses its id, run id, creation time and lifecycle status.
type AddRecord struct {
	Role            *string         `json:"role,omitempty"`
	ContentType     *string         `json:"content_type,omitempty"`
	TextPayload     *string         `json:"text_payload,omitempty"`
	BinaryPayload   []byte          `json:"binary_payload,omitempty"`
	PayloadURI      *string         `json:"payload_uri,omitempty"`
	PayloadSize     *int64          `json:"payload_size,omitempty"`
	PayloadChecksum *string         `json:"payload_checksum,omitempty"`
	Embedding       []float32       `json:"embedding,omitempty"`
	BotID           *string         `json:"bot_id,omitempty"`
	SessionID       *string         `json:"session_id,omitempty"`
	Tenant          *string         `json:"tenant,omitempty"`
	Source          *string         `json:"source,omitempty"`
	ExternalID      *string         `json:"external_id,omitempty"`
	StateMetadata   *StateMetadata  `json:"state_metadata,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	Relationships   []Relationship  `json:"relationships,omitempty"`
	ExpiresAt       *time.Time      `json:"expires_at,omitempty"`
	RetentionPolicy *string         `json:"retention_policy,omitempty"`
	SupersedesID    *string         `json:"supersedes_id,omitempty"`
}

// Patch is the fields an update replaces (lance-context's RecordPatchDto); absent fields keep
// the original's value.
type Patch struct {
	BotID           *string         `json:"bot_id,omitempty"`
	SessionID       *string         `json:"session_id,omitempty"`
	Tenant          *string         `json:"tenant,omitempty"`
	Source          *string         `json:"source,omitempty"`
	StateMetadata   *StateMetadata  `json:"state_metadata,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	Relationships   *[]Relationship `json:"relationships,omitempty"`
	ExpiresAt       *time.Time      `json:"expires_at,omitempty"`
	RetentionPolicy *string         `json:"retention_policy,omitempty"`
	LifecycleStatus *string         `json:"lifecycle_status,omitempty"`
	RetiredAt       *time.Time      `json:"retired_at,omitempty"`
	RetiredReason   *string         `json:"retired_reason,omitempty"`
	Embedding       []float32       `json:"embedding,omitempty"`
}

// Empty reports whether the patch changes nothing.
func (p *Patch) Empty() bool {
	return p.BotID == nil && p.SessionID == nil && p.Tenant == nil && p.Source == nil && p.StateMetadata == nil &&
		!present(p.Metadata) && p.Relationships == nil && p.ExpiresAt == nil && p.RetentionPolicy == nil &&
		p.LifecycleStatus == nil && p.RetiredAt == nil && p.RetiredReason == nil && p.Embedding == nil
}

// Limits on one record, checked before anything is written.
const (
	MaxIDBytes            = 1024     // external ids, relationship targets, supersedes ids
	MaxShortFieldBytes    = 1024     // role, content type, bot/session/tenant/source, statuses
	MaxMetadataBytes      = 64 << 10 // metadata and state_metadata.custom, each
	MaxRelationships      = 1024     // per record
	MaxTextPayloadBytes   = 8 << 20  // one record's text payload
	MaxBinaryPayloadBytes = 16 << 20 // one record's binary payload (the request body bounds it first)
	MaxRecordsPerRequest  = 10_000   // records of one add or batch upsert
	maxFieldBytesMessage  = "%s is %d bytes, over the limit of %d"
	claimContentType      = "application/vnd.strata.external-id-claim"
	defaultRole           = "user"
	defaultContentType    = "text/plain"
)

// Rules are what a store declares that records must satisfy.
type Rules struct {
	EmbeddingDim int // 0: any length (1..MaxEmbeddingDim)
}

// NewRecord checks an added record and builds the stored record with the id, run id and time the
// server chose. Errors are the caller's (a 400).
func (r Rules) NewRecord(a AddRecord, id, runID string, now time.Time) (Record, error) {
	rec := Record{
		ID: id, ExternalID: a.ExternalID, RunID: runID, BotID: a.BotID, SessionID: a.SessionID, Tenant: a.Tenant,
		Source: a.Source, CreatedAt: now.UTC().Truncate(time.Microsecond), Role: defaultRole, ContentType: defaultContentType,
		TextPayload: a.TextPayload, BinaryPayload: a.BinaryPayload, PayloadURI: a.PayloadURI, PayloadSize: a.PayloadSize,
		PayloadChecksum: a.PayloadChecksum, Embedding: a.Embedding, StateMetadata: a.StateMetadata,
		Metadata: a.Metadata, Relationships: a.Relationships, ExpiresAt: a.ExpiresAt, RetentionPolicy: a.RetentionPolicy,
		LifecycleStatus: LifecycleActive, SupersedesID: a.SupersedesID,
	}
	if a.Role != nil {
		rec.Role = *a.Role
	}
	if a.ContentType != nil {
		rec.ContentType = *a.ContentType
	}
	if rec.BinaryPayload != nil && rec.PayloadSize == nil {
		n := int64(len(rec.BinaryPayload))
		rec.PayloadSize = &n // lists omit the payload; its size tells a reader there is one
	}
	if err := r.Check(&rec); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// Apply is the successor of orig under patch: a new record (id, time) that supersedes orig.
func (r Rules) Apply(orig Record, p Patch, id string, now time.Time) (Record, error) {
	next := orig
	next.ID = id
	next.CreatedAt = now.UTC().Truncate(time.Microsecond)
	next.SupersedesID = &orig.ID
	next.SupersededByID = nil
	set := func(dst **string, v *string) {
		if v != nil {
			*dst = v
		}
	}
	set(&next.BotID, p.BotID)
	set(&next.SessionID, p.SessionID)
	set(&next.Tenant, p.Tenant)
	set(&next.Source, p.Source)
	set(&next.RetentionPolicy, p.RetentionPolicy)
	set(&next.RetiredReason, p.RetiredReason)
	if p.StateMetadata != nil {
		next.StateMetadata = p.StateMetadata
	}
	if present(p.Metadata) {
		next.Metadata = p.Metadata
	}
	if p.Relationships != nil {
		next.Relationships = *p.Relationships
	}
	if p.ExpiresAt != nil {
		next.ExpiresAt = p.ExpiresAt
	}
	if p.LifecycleStatus != nil {
		next.LifecycleStatus = *p.LifecycleStatus
	}
	if p.RetiredAt != nil {
		next.RetiredAt = p.RetiredAt
	}
	if p.Embedding != nil {
		next.Embedding = p.Embedding
	}
	if err := r.Check(&next); err != nil {
		return Record{}, err
	}
	return next, nil
}

// Check validates a record as it will be stored and normalizes what JSON leaves open (a null
// metadata document is no metadata; times are UTC microseconds). Errors are the caller's.
func (r Rules) Check(rec *Record) error {
	for _, f := range []struct {
		name string
		v    *string
		max  int
	}{
		{"external_id", rec.ExternalID, MaxIDBytes}, {"bot_id", rec.BotID, MaxShortFieldBytes},
		{"session_id", rec.SessionID, MaxShortFieldBytes}, {"tenant", rec.Tenant, MaxShortFieldBytes},
		{"source", rec.Source, MaxShortFieldBytes}, {"payload_uri", rec.PayloadURI, MaxIDBytes},
		{"payload_checksum", rec.PayloadChecksum, MaxShortFieldBytes}, {"retention_policy", rec.RetentionPolicy, MaxShortFieldBytes},
		{"retired_reason", rec.RetiredReason, MaxMetadataBytes}, {"supersedes_id", rec.SupersedesID, MaxIDBytes},
		{"role", &rec.Role, MaxShortFieldBytes}, {"content_type", &rec.ContentType, MaxShortFieldBytes},
		{"lifecycle_status", &rec.LifecycleStatus, MaxShortFieldBytes}, {"text_payload", rec.TextPayload, MaxTextPayloadBytes},
	} {
		if f.v == nil {
			continue
		}
		if !utf8.ValidString(*f.v) {
			return fmt.Errorf("%s is not valid UTF-8", f.name)
		}
		if len(*f.v) > f.max {
			return fmt.Errorf(maxFieldBytesMessage, f.name, len(*f.v), f.max)
		}
	}
	if rec.ExternalID != nil && *rec.ExternalID == "" {
		return fmt.Errorf("external_id must not be empty (omit it instead)")
	}
	if rec.LifecycleStatus == "" {
		return fmt.Errorf("lifecycle_status must not be empty")
	}
	if len(rec.BinaryPayload) > MaxBinaryPayloadBytes {
		return fmt.Errorf(maxFieldBytesMessage, "binary_payload", len(rec.BinaryPayload), MaxBinaryPayloadBytes)
	}
	if rec.PayloadSize != nil && *rec.PayloadSize < 0 {
		return fmt.Errorf("payload_size must not be negative")
	}
	if err := r.checkEmbedding("embedding", rec.Embedding); err != nil {
		return err
	}
	if !present(rec.Metadata) {
		rec.Metadata = nil
	} else {
		if len(rec.Metadata) > MaxMetadataBytes {
			return fmt.Errorf(maxFieldBytesMessage, "metadata", len(rec.Metadata), MaxMetadataBytes)
		}
		if !json.Valid(rec.Metadata) {
			return fmt.Errorf("metadata is not valid JSON")
		}
	}
	if sm := rec.StateMetadata; sm != nil && sm.Custom != nil && len(*sm.Custom) > MaxMetadataBytes {
		return fmt.Errorf(maxFieldBytesMessage, "state_metadata.custom", len(*sm.Custom), MaxMetadataBytes)
	}
	if len(rec.Relationships) > MaxRelationships {
		return fmt.Errorf("%d relationships, over the limit of %d a record", len(rec.Relationships), MaxRelationships)
	}
	for i, rel := range rec.Relationships {
		switch {
		case rel.TargetID == "" || rel.Relation == "":
			return fmt.Errorf("relationships[%d]: target_id and relation are required", i)
		case len(rel.TargetID) > MaxIDBytes || len(rel.Relation) > MaxShortFieldBytes:
			return fmt.Errorf("relationships[%d]: target_id or relation is too long", i)
		case !utf8.ValidString(rel.TargetID) || !utf8.ValidString(rel.Relation):
			return fmt.Errorf("relationships[%d]: not valid UTF-8", i)
		case rel.TargetID == rec.ID || (rec.ExternalID != nil && rel.TargetID == *rec.ExternalID):
			return fmt.Errorf("relationships[%d]: a record cannot relate to itself", i)
		case rel.Weight != nil && !finite(*rel.Weight):
			return fmt.Errorf("relationships[%d]: weight must be a finite number", i)
		}
	}
	if rec.SupersedesID != nil && *rec.SupersedesID == rec.ID {
		return fmt.Errorf("a record cannot supersede itself")
	}
	for _, t := range []**time.Time{&rec.ExpiresAt, &rec.RetiredAt} {
		if *t != nil {
			u := (*t).UTC().Truncate(time.Microsecond)
			*t = &u
		}
	}
	return nil
}

// CheckQuery validates a query vector against the store's rules.
func (r Rules) CheckQuery(name string, v []float32) error {
	if len(v) == 0 {
		return fmt.Errorf("%s must be a non-empty array of numbers", name)
	}
	return r.checkEmbedding(name, v)
}

func (r Rules) checkEmbedding(name string, v []float32) error {
	if v == nil {
		return nil
	}
	switch {
	case len(v) == 0:
		return fmt.Errorf("%s must not be empty (omit it instead)", name)
	case r.EmbeddingDim > 0 && len(v) != r.EmbeddingDim:
		return fmt.Errorf("%s has %d dimensions; the store's embedding_dim is %d", name, len(v), r.EmbeddingDim)
	case len(v) > MaxEmbeddingDim:
		return fmt.Errorf("%s has %d dimensions, over the limit of %d", name, len(v), MaxEmbeddingDim)
	}
	for i, x := range v {
		if !finite(x) {
			return fmt.Errorf("%s[%d] is not a finite number", name, i)
		}
	}
	return nil
}

func finite(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// present reports whether a JSON document is there and not null.
func present(doc json.RawMessage) bool {
	s := strings.TrimSpace(string(doc))
	return s != "" && s != "null"
}

// IsRecordID reports whether id may name a record (not an external id's claim row).
func IsRecordID(id string) bool { return id != "" && !strings.HasPrefix(id, ExternalIDKeyPrefix) }

// ClaimKey is the key of external id xid's claim row.
func ClaimKey(xid string) string { return ExternalIDKeyPrefix + xid }

// Claim is the row that says record id holds external id xid. The id is its payload_uri: a claim
// has no text, so the store's full-text statistics count records only.
func Claim(xid, id string, now time.Time) Record {
	return Record{ID: ClaimKey(xid), ExternalID: &xid, RunID: "", CreatedAt: now.UTC().Truncate(time.Microsecond),
		ContentType: claimContentType, PayloadURI: &id, LifecycleStatus: LifecycleActive}
}

// ClaimedID is the record id a claim row names ("" when rec is not a claim).
func ClaimedID(rec Record) string {
	if rec.ContentType != claimContentType || rec.PayloadURI == nil {
		return ""
	}
	return *rec.PayloadURI
}
